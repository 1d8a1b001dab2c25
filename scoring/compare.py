"""Run comparison: metric deltas on shared questions and a claim-by-claim diff
(SPEC §5: "a coverage drop from 90% to 85% hides which claims lost their
citations — the diff must name them").

Input, one :class:`RunFrames` per run:

- ``claims``: one row per claim, columns ``claim_id`` (hashable, unique),
  ``answer_id``, ``question_id`` (str), ``claim_index`` (int, 1-based),
  ``claim`` (text), ``n_citations`` (int ≥ 0), ``label`` (SUPPORTED /
  UNSUPPORTED / UNCITED, or null = pending) and optionally ``abstention``
  (bool) — the frame of ``labeling.scores.metrics.resolved_claims_frame``.
- ``citations``: one row per citation, ``claim_id``, ``passage_id`` (str, as
  cited), optionally ``source`` (str, "" when unknown) and ``fabricated``
  (bool, default False).
- ``answers``: optional, one row per answer, ``answer_id``, ``question_id``,
  optionally ``has_gold`` (bool); needed for answers without claims and for
  citation precision/recall. Derived from ``claims`` when omitted.
- ``gold_ids``: optional, ``answer_id``, ``passage_id`` (SPEC §4.2).
- ``judgments``: optional, one row per citation, ``citation_id``,
  ``claim_id``, ``judgment`` (or null), as ``scoring.judgments`` takes it:
  with judgments on either side the summary adds the judged citation
  precision under ``rule`` (SPEC §4.3b).

Runs are compared on the questions both answered (by ``question_id``); every
other question is left out of every figure and listed as answered by one run
only. Deltas are B − A, ``None`` when either side is undefined, computed from
the integer counts as exact fractions in :mod:`scoring.deltas`.

Claim alignment (within one question): claims are compared by their
:func:`claim_key` — citation markers such as ``[1]``, ``[P1, P3]`` or
``【4】`` removed, then :func:`scoring.normalize.normalize_text` (NFKC,
typographic folding, case folding, whitespace collapsed), spaces before
punctuation dropped. Equal keys pair first (the k-th occurrence in A with
the k-th in B). The claims left over are paired by similarity, the
normalized Indel similarity of their keys ``(len_a + len_b − distance) /
(len_a + len_b)`` (``rapidfuzz``'s ``fuzz.ratio`` / 100), compared exactly
with the threshold; pairs with similarity ≥ threshold are taken greedily,
best score first (ties: nearest claim positions, then earlier claims), each
claim at most once. Unpaired claims of A are *removed*, of B *added*.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any

from scoring.citation_ids import citation_id_metrics
from scoring.claims import ClaimMetrics, claim_metrics, to_native
from scoring.deltas import MetricDelta, per_question_deltas, summary_deltas
from scoring.figures import paired_differences, run_figures
from scoring.intervals import DEFAULT_CONFIDENCE, PairedDifference, check_confidence
from scoring.judgments import DEFAULT_RULE, JudgmentMetrics, citation_judgments
from scoring.labels import require_columns
from scoring.lazy import np, pd  # loaded on first use: keeps start-up fast (SPEC §7)
from scoring.normalize import normalize_source, normalize_text, strip_markers
from scoring.ratio import Ratio

DEFAULT_THRESHOLD = 0.85

CLAIM_COLUMNS = ("claim_id", "answer_id", "question_id", "claim_index", "claim", "n_citations", "label")

_SPACE_BEFORE_PUNCT = re.compile(r"\s+([.,;:!?])")

# Citation changes (SPEC §5): the claim lost every citation, gained its first,
# or is cited in both runs but from a different set of sources.
LOST = "lost"
GAINED = "gained"
CHANGED = "changed"


def claim_key(text: str | None) -> str:
    """The form two claims are compared in: markers stripped, then normalized.

    ``"Retries use backoff [1]."`` and ``"retries  use backoff [P2] ."`` both
    give ``"retries use backoff."``. Only for comparing, never for display.
    """
    if not text:
        return ""
    stripped = strip_markers(text)
    return _SPACE_BEFORE_PUNCT.sub(r"\1", normalize_text(stripped))


@dataclass(frozen=True)
class RunFrames:
    """One run's frames as the module docstring describes; ``name`` is the run's name."""

    name: str
    claims: pd.DataFrame
    citations: pd.DataFrame
    answers: pd.DataFrame | None = None
    gold_ids: pd.DataFrame | None = None
    judgments: pd.DataFrame | None = None


@dataclass(frozen=True)
class Comparison:
    """Run B against run A on the questions both answered (SPEC §5).

    - ``shared_questions``: the question ids both runs answered, sorted;
      ``only_a``/``only_b``: answered by one run only (left out of everything).
    - ``summary``: pooled coverage, support, gap (and citation precision and
      recall when gold exists), then the per-answer means, as :class:`MetricDelta`,
      each with its paired difference and interval at ``confidence`` (SPEC §4.5).
    - ``per_question``: one row per shared question (sorted by
      ``question_id``): ``question_id``, per side ``s`` in ``a``/``b``:
      ``answer_id_s, claims_s, cited_s, labeled_cited_s, supported_s,
      pending_s`` (int), ``coverage_s, support_s, gap_s`` (float or None), and
      when ``has_gold``: ``tp_s, fp_s, fn_s`` (int or None), ``precision_s,
      recall_s``; the deltas ``coverage_delta, support_delta, gap_delta``
      (+ ``precision_delta, recall_delta``); and the diff counts ``aligned,
      label_flips, citation_changes, added, removed`` (int).
    - ``alignment``: one row per claim pair or unpaired claim of the shared
      questions, sorted by question then position: ``question_id``, ``status``
      (``aligned``/``added``/``removed``), ``match`` (``exact``/``fuzzy``/""),
      ``similarity`` (float in [0, 1]; 1.0 for exact, NaN when unpaired), per
      side ``claim_id_s, answer_id_s, claim_index_s, claim_s, label_s,
      n_citations_s`` (missing on the absent side: null).
    - ``label_flips``: aligned claims whose label is given in both runs and
      differs (a pending side is not a flip). Columns of ``alignment``.
    - ``citation_changes``: aligned claims that ``lost`` every citation,
      ``gained`` their first, or ``changed`` the set of cited sources
      (column ``change``), with ``sources_lost``/``sources_gained`` (tuples of
      sources; a citation without a source counts as ``[its id]``).
    - ``added`` / ``removed``: claims of B / A with no partner.
    """

    run_a: str
    run_b: str
    threshold: float
    shared_questions: list[str]
    only_a: list[str]
    only_b: list[str]
    has_gold: bool
    summary: list[MetricDelta]
    per_question: pd.DataFrame = field(repr=False)
    alignment: pd.DataFrame = field(repr=False)
    label_flips: pd.DataFrame = field(repr=False)
    citation_changes: pd.DataFrame = field(repr=False)
    added: pd.DataFrame = field(repr=False)
    removed: pd.DataFrame = field(repr=False)
    confidence: float = DEFAULT_CONFIDENCE

    def metric(self, key: str) -> MetricDelta:
        """The summary row named ``key`` (``coverage``, ``support``, ``gap``,
        ``precision``, ``recall``, ``mean_coverage``, ``mean_support``)."""
        for row in self.summary:
            if row.key == key:
                return row
        raise KeyError(key)

    def counts(self) -> dict[str, int]:
        """Claim-diff counts: ``aligned, exact, fuzzy, label_flips,
        citation_changes, added, removed``."""
        status = self.alignment["status"]
        return {
            "aligned": int((status == "aligned").sum()),
            "exact": int((self.alignment["match"] == "exact").sum()),
            "fuzzy": int((self.alignment["match"] == "fuzzy").sum()),
            "label_flips": len(self.label_flips),
            "citation_changes": len(self.citation_changes),
            "added": len(self.added),
            "removed": len(self.removed),
        }

    def to_dict(self, *, intervals: bool = False) -> dict[str, Any]:
        """The JSON object of ``compare --format json``: keys ``run_a, run_b,
        threshold, questions {shared, only_a, only_b}, has_gold, summary
        {metric: {a, b, delta, a_text, b_text}}, claims (counts), per_question,
        label_flips, citation_changes, added, removed`` (lists of records;
        undefined values are ``None``). ``intervals``: each summary entry also
        carries its delta's paired interval, ``ci95`` (or ``ci`` with ``level``),
        ``n_questions`` and ``method`` (SPEC §4.5; the command prints them)."""
        return {
            "run_a": self.run_a,
            "run_b": self.run_b,
            "threshold": self.threshold,
            "questions": {"shared": len(self.shared_questions), "only_a": self.only_a, "only_b": self.only_b},
            "has_gold": self.has_gold,
            "summary": {row.key: row.to_dict(interval=intervals) for row in self.summary},
            "claims": self.counts(),
            "per_question": records(self.per_question),
            "label_flips": records(self.label_flips[_FLIP_COLUMNS]),
            "citation_changes": records(self.citation_changes[_CHANGE_COLUMNS]),
            "added": records(self.added[_ADDED_COLUMNS]),
            "removed": records(self.removed[_REMOVED_COLUMNS]),
        }


_SIDE_COLUMNS = ("claim_id", "answer_id", "claim_index", "claim", "label", "n_citations")
_ALIGNMENT_COLUMNS = (
    ["question_id", "status", "match", "similarity"]
    + [f"{c}_a" for c in _SIDE_COLUMNS]
    + [f"{c}_b" for c in _SIDE_COLUMNS]
)
_FLIP_COLUMNS = [
    "question_id", "answer_id_a", "answer_id_b", "claim_index_a", "claim_index_b", "claim_a", "claim_b",
    "label_a", "label_b", "match", "similarity",
]
_CHANGE_COLUMNS = [
    "question_id", "change", "answer_id_a", "answer_id_b", "claim_index_a", "claim_index_b", "claim_a",
    "claim_b", "n_citations_a", "n_citations_b", "sources_lost", "sources_gained", "label_a", "label_b",
]
_ADDED_COLUMNS = ["question_id", "answer_id_b", "claim_index_b", "claim_b", "label_b", "n_citations_b"]
_REMOVED_COLUMNS = ["question_id", "answer_id_a", "claim_index_a", "claim_a", "label_a", "n_citations_a"]


def compare_runs(a: RunFrames, b: RunFrames, *, threshold: float = DEFAULT_THRESHOLD,
                 rule: str = DEFAULT_RULE, confidence: float = DEFAULT_CONFIDENCE) -> Comparison:
    """Compare run ``b`` against run ``a`` (SPEC §5): metric deltas and the claim diff.

    ``threshold`` is the fuzzy alignment similarity in (0, 1] (module
    docstring); ``confidence`` the level of the deltas' paired intervals (SPEC
    §4.5). Returns a :class:`Comparison`.

    Raises ``ValueError`` on a threshold outside (0, 1], a level outside (0, 1),
    a missing column, a duplicated ``claim_id``, a run with two answers to one
    question, or a label breaking SPEC §3 (as :func:`scoring.claims.claim_metrics`).
    """
    if not (isinstance(threshold, (int, float)) and 0 < threshold <= 1):
        raise ValueError(f"threshold must be in (0, 1], got {threshold!r}")
    check_confidence(confidence)
    side_a, side_b = _Side.build(a), _Side.build(b)
    questions_a, questions_b = set(side_a.answers["question_id"]), set(side_b.answers["question_id"])
    shared = sorted(questions_a & questions_b)
    side_a, side_b = side_a.restricted(set(shared)), side_b.restricted(set(shared))

    alignment = align_claims(side_a.claims, side_b.claims, threshold=threshold)
    flips = _label_flips(alignment)
    changes = _citation_changes(alignment, side_a.citations, side_b.citations)
    added = alignment[alignment["status"] == "added"].reset_index(drop=True)
    removed = alignment[alignment["status"] == "removed"].reset_index(drop=True)

    claims_a, claims_b = side_a.claim_metrics(), side_b.claim_metrics()
    has_gold = bool(side_a.answers["has_gold"].any() or side_b.answers["has_gold"].any())
    ids_a, ids_b = (side_a.id_metrics(), side_b.id_metrics()) if has_gold else (None, None)
    per_question, fractions = per_question_deltas(
        shared, claims_a, claims_b, ids_a, ids_b,
        diff_counts={"label_flips": flips, "citation_changes": changes, "added": added, "removed": removed},
        alignment=alignment,
    )
    judged = None
    judged_a = judged_b = None
    if side_a.judgments is not None or side_b.judgments is not None:
        judged_a, judged_b = side_a.judgment_metrics(rule), side_b.judgment_metrics(rule)
        judged = (_precision(judged_a), _precision(judged_b), rule)
    summary = summary_deltas(claims_a, claims_b, ids_a, ids_b, fractions, judged=judged)
    differences = paired_differences(
        run_figures(claims=claims_a, citation_ids=ids_a, judgments=judged_a),
        run_figures(claims=claims_b, citation_ids=ids_b, judgments=judged_b),
        questions=shared, keys=[row.key for row in summary], confidence=confidence,
    )
    summary = [replace(row, difference=differences.get(row.key) or PairedDifference(
        row.a, row.b, row.delta, None, None, confidence, 0)) for row in summary]
    return Comparison(
        run_a=a.name, run_b=b.name, threshold=float(threshold), shared_questions=shared,
        only_a=sorted(questions_a - questions_b), only_b=sorted(questions_b - questions_a),
        has_gold=has_gold, summary=summary, per_question=per_question, alignment=alignment,
        label_flips=flips, citation_changes=changes, added=added, removed=removed, confidence=confidence,
    )


def _precision(metrics: JudgmentMetrics | None) -> Ratio:
    return metrics.precision if metrics is not None else Ratio(0, 0)


def align_claims(claims_a: pd.DataFrame, claims_b: pd.DataFrame, *, threshold: float) -> pd.DataFrame:
    """Pair the claims of two runs question by question (module docstring).

    In: two claims frames (columns ``CLAIM_COLUMNS``). Out: the ``alignment``
    frame of :class:`Comparison`. Claims of a question only one frame has come
    out as added/removed; restrict both frames to shared questions first.
    """
    a = _keyed(claims_a)
    b = _keyed(claims_b)
    exact = a[["row", "question_id", "key", "occurrence"]].merge(
        b[["row", "question_id", "key", "occurrence"]], on=["question_id", "key", "occurrence"],
        suffixes=("_a", "_b"),
    )
    pairs_a = [exact["row_a"].to_numpy(dtype="int64")]
    pairs_b = [exact["row_b"].to_numpy(dtype="int64")]
    similarity = [np.ones(len(exact))]
    fuzzy_a, fuzzy_b, fuzzy_sim = _fuzzy_pairs(
        a.drop(index=exact["row_a"]), b.drop(index=exact["row_b"]), threshold=threshold
    )
    pairs_a.append(fuzzy_a)
    pairs_b.append(fuzzy_b)
    similarity.append(fuzzy_sim)
    row_a = np.concatenate(pairs_a)
    row_b = np.concatenate(pairs_b)
    paired = pd.DataFrame(
        {
            "question_id": a["question_id"].to_numpy(dtype=object)[row_a],
            "status": "aligned",
            "match": np.where(np.arange(len(row_a)) < len(exact), "exact", "fuzzy"),
            "similarity": np.concatenate(similarity),
            **_side(a, row_a, "a"),
            **_side(b, row_b, "b"),
        }
    )
    lone_a = np.setdiff1d(a["row"].to_numpy(), row_a)
    lone_b = np.setdiff1d(b["row"].to_numpy(), row_b)
    removed = pd.DataFrame(
        {"question_id": a["question_id"].to_numpy(dtype=object)[lone_a], "status": "removed", "match": "",
         "similarity": np.nan, **_side(a, lone_a, "a")}
    )
    added = pd.DataFrame(
        {"question_id": b["question_id"].to_numpy(dtype=object)[lone_b], "status": "added", "match": "",
         "similarity": np.nan, **_side(b, lone_b, "b")}
    )
    frames = [frame for frame in (paired, removed, added) if len(frame)]
    if not frames:
        return pd.DataFrame({column: pd.Series([], dtype=object) for column in _ALIGNMENT_COLUMNS})
    result = pd.concat(frames, ignore_index=True).reindex(columns=_ALIGNMENT_COLUMNS)
    # Position in the question: a pair sorts by its A claim, an added claim by its B claim.
    index_a = pd.to_numeric(result["claim_index_a"]).astype("Float64")
    index_b = pd.to_numeric(result["claim_index_b"]).astype("Float64")
    order = pd.DataFrame(
        {"question": result["question_id"].astype(str), "position": index_a.fillna(index_b),
         "then": index_b.fillna(0)}
    ).sort_values(["question", "position", "then"], kind="stable").index
    return result.loc[order].reset_index(drop=True)


def records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """``frame`` as JSON-ready dicts: numpy scalars unwrapped, NaN/NA as ``None``,
    tuples as lists."""
    columns = list(frame.columns)
    values = [frame[column].tolist() for column in columns]
    out = []
    for row in zip(*values, strict=True):
        out.append({
            column: list(value) if isinstance(value, tuple) else to_native(value)
            for column, value in zip(columns, row, strict=True)
        })
    return out


# --- internals -------------------------------------------------------------


@dataclass
class _Side:
    claims: pd.DataFrame
    citations: pd.DataFrame
    answers: pd.DataFrame
    gold_ids: pd.DataFrame
    judgments: pd.DataFrame | None = None

    @classmethod
    def build(cls, frames: RunFrames) -> _Side:
        claims = frames.claims
        require_columns(claims, CLAIM_COLUMNS, name=f"claims of run {frames.name!r}")
        if claims["claim_id"].duplicated().any():
            raise ValueError(f"claims of run {frames.name!r} repeat a claim_id")
        citations = frames.citations
        require_columns(citations, ("claim_id", "passage_id"), name=f"citations of run {frames.name!r}")
        citations = citations.copy()
        if "source" not in citations.columns:
            citations["source"] = ""
        if "fabricated" not in citations.columns:
            citations["fabricated"] = False
        owner = claims.set_index("claim_id")["answer_id"]
        citations["answer_id"] = citations["claim_id"].map(owner)
        if citations["answer_id"].isna().any():
            raise ValueError(f"citations of run {frames.name!r} point at claims not in its claims frame")
        if frames.answers is None:
            answers = claims[["answer_id", "question_id"]].drop_duplicates("answer_id")
        else:
            require_columns(frames.answers, ("answer_id", "question_id"), name=f"answers of run {frames.name!r}")
            answers = frames.answers
        answers = answers.copy()
        if "has_gold" not in answers.columns:
            answers["has_gold"] = False
        answers["has_gold"] = answers["has_gold"].astype("boolean").fillna(False).astype(bool)
        if answers["question_id"].duplicated().any():
            twice = answers.loc[answers["question_id"].duplicated(), "question_id"].unique()[:5]
            raise ValueError(f"run {frames.name!r} answers question(s) {list(twice)} more than once")
        gold_ids = frames.gold_ids
        if gold_ids is None:
            gold_ids = pd.DataFrame({"answer_id": [], "passage_id": []}, dtype=object)
        return cls(claims=claims, citations=citations, answers=answers.reset_index(drop=True), gold_ids=gold_ids,
                   judgments=frames.judgments)

    def restricted(self, questions: set[str]) -> _Side:
        answers = self.answers[self.answers["question_id"].isin(questions)].reset_index(drop=True)
        kept = set(answers["answer_id"])
        return _Side(
            claims=self.claims[self.claims["question_id"].isin(questions)].reset_index(drop=True),
            citations=self.citations[self.citations["answer_id"].isin(kept)].reset_index(drop=True),
            answers=answers,
            gold_ids=self.gold_ids[self.gold_ids["answer_id"].isin(kept)].reset_index(drop=True),
            judgments=self.judgments,
        )

    def judgment_metrics(self, rule: str) -> JudgmentMetrics | None:
        """Citation precision of this side's judgments on its (kept) claims (SPEC §4.3b),
        ``None`` when the run has no judgments."""
        if self.judgments is None:
            return None
        columns = [c for c in ("claim_id", "answer_id", "question_id", "label", "factual", "abstention")
                   if c in self.claims.columns]
        return citation_judgments(self.claims[columns], self.judgments, rule=rule)

    def claim_metrics(self) -> ClaimMetrics:
        columns = ["answer_id", "question_id", "claim_index", "n_citations", "label"]
        columns += [c for c in ("abstention", "factual") if c in self.claims.columns]
        return claim_metrics(self.claims[columns], self.answers[["answer_id", "question_id"]])

    def id_metrics(self):
        return citation_id_metrics(
            self.answers[["answer_id", "question_id", "has_gold"]],
            self.citations[["answer_id", "passage_id", "fabricated"]],
            self.gold_ids[["answer_id", "passage_id"]],
        )


def _keyed(claims: pd.DataFrame) -> pd.DataFrame:
    """Claims sorted by question and position, with ``row`` (0..n-1), ``key``
    and ``occurrence`` (k-th claim with that key in its question)."""
    frame = claims.assign(question_id=claims["question_id"].astype(str))
    frame = frame.sort_values(["question_id", "claim_index"], kind="stable").reset_index(drop=True)
    frame["key"] = [claim_key(text) for text in frame["claim"].tolist()]
    frame["occurrence"] = frame.groupby(["question_id", "key"], sort=False).cumcount()
    frame["row"] = np.arange(len(frame))
    return frame


def _side(frame: pd.DataFrame, rows: np.ndarray, suffix: str) -> dict[str, np.ndarray]:
    return {f"{column}_{suffix}": frame[column].to_numpy(dtype=object)[rows] for column in _SIDE_COLUMNS}


def _fuzzy_pairs(
    left_a: pd.DataFrame, left_b: pd.DataFrame, *, threshold: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Greedy one-to-one pairs of leftover claims, question by question.

    Similarity is ``(len_a + len_b − indel distance) / (len_a + len_b)`` and
    is compared with ``threshold`` in exact integer arithmetic (so a pair at
    exactly 0.85 passes 0.85).
    """
    empty = (np.array([], dtype="int64"), np.array([], dtype="int64"), np.array([], dtype=float))
    if left_a.empty or left_b.empty:
        return empty
    # rapidfuzz loads only when runs are compared, not with every module that imports this one
    from rapidfuzz.distance import Indel
    from rapidfuzz.process import cdist

    limit = Fraction(str(threshold))
    num, den = limit.numerator, limit.denominator
    # Both frames are sorted by question (``_keyed``): slice each question's rows
    # from plain arrays instead of iterating pandas groups (10k questions).
    slices_b = _question_slices(left_b["question_id"].to_numpy(dtype=object))
    keys_a, keys_b = left_a["key"].tolist(), left_b["key"].tolist()
    rows_a, rows_b = left_a["row"].to_numpy(), left_b["row"].to_numpy()
    index_a, index_b = left_a["claim_index"].to_numpy(dtype="int64"), left_b["claim_index"].to_numpy(dtype="int64")
    len_a = np.fromiter(map(len, keys_a), dtype=np.int64, count=len(keys_a))
    len_b = np.fromiter(map(len, keys_b), dtype=np.int64, count=len(keys_b))
    out_a: list[int] = []
    out_b: list[int] = []
    out_sim: list[float] = []
    for question, (a0, a1) in _question_slices(left_a["question_id"].to_numpy(dtype=object)).items():
        if question not in slices_b:
            continue
        b0, b1 = slices_b[question]
        distance = cdist(keys_a[a0:a1], keys_b[b0:b1], scorer=Indel.distance, dtype=np.int64)
        total = np.add.outer(len_a[a0:a1], len_b[b0:b1])
        same = total - distance
        # same/total >= num/den, in integers; two empty keys would be an exact match already.
        ok_i, ok_j = np.nonzero((same * den >= num * total) & (total > 0))
        if not len(ok_i):
            continue
        score = same[ok_i, ok_j] / total[ok_i, ok_j]
        pos_a, pos_b = index_a[a0:a1][ok_i], index_b[b0:b1][ok_j]
        order = np.lexsort((pos_b, pos_a, np.abs(pos_a - pos_b), -score))
        used_a: set[int] = set()
        used_b: set[int] = set()
        for k in order.tolist():
            i, j = int(ok_i[k]), int(ok_j[k])
            if i in used_a or j in used_b:
                continue
            used_a.add(i)
            used_b.add(j)
            out_a.append(int(rows_a[a0 + i]))
            out_b.append(int(rows_b[b0 + j]))
            out_sim.append(float(score[k]))
    if not out_a:
        return empty
    return np.array(out_a, dtype="int64"), np.array(out_b, dtype="int64"), np.array(out_sim, dtype=float)


def _question_slices(questions: np.ndarray) -> dict[str, tuple[int, int]]:
    """``{question: (start, stop)}`` of a question-sorted array."""
    if not len(questions):
        return {}
    starts = np.flatnonzero(np.r_[True, questions[1:] != questions[:-1]])
    stops = np.r_[starts[1:], len(questions)]
    return {questions[i]: (int(i), int(j)) for i, j in zip(starts, stops, strict=True)}


def _label_flips(alignment: pd.DataFrame) -> pd.DataFrame:
    aligned = alignment[alignment["status"] == "aligned"]
    given = aligned["label_a"].notna() & aligned["label_b"].notna()
    return aligned[given & (aligned["label_a"] != aligned["label_b"])].reset_index(drop=True)


def _source_keys(citations: pd.DataFrame) -> pd.DataFrame:
    """Per citation: ``claim_id``, ``key`` (normalized source, or the id for a
    citation without a source) and ``shown`` (what the page prints)."""
    sources = citations["source"].fillna("").astype(str)
    ids = citations["passage_id"].astype(str)
    # Few distinct sources, many citations: normalize each distinct source once.
    distinct = sources.unique()
    normalized = sources.map(dict(zip(distinct, map(normalize_source, distinct), strict=True)))
    has_source = normalized != ""
    return pd.DataFrame(
        {
            "claim_id": citations["claim_id"].to_numpy(dtype=object),
            "key": np.where(has_source, "source:" + normalized, "id:" + ids),
            "shown": np.where(has_source, sources, "[" + ids + "]"),
        }
    ).drop_duplicates(["claim_id", "key"])


def _citation_changes(alignment: pd.DataFrame, citations_a: pd.DataFrame, citations_b: pd.DataFrame) -> pd.DataFrame:
    aligned = alignment[alignment["status"] == "aligned"].reset_index(drop=True)
    n_a = aligned["n_citations_a"].astype("int64")
    n_b = aligned["n_citations_b"].astype("int64")
    pair = pd.DataFrame(
        {"pair": np.arange(len(aligned)), "claim_a": aligned["claim_id_a"], "claim_b": aligned["claim_id_b"]}
    )
    keys_a = pair.merge(_source_keys(citations_a), left_on="claim_a", right_on="claim_id")[["pair", "key", "shown"]]
    keys_b = pair.merge(_source_keys(citations_b), left_on="claim_b", right_on="claim_id")[["pair", "key", "shown"]]
    both = keys_a.merge(keys_b, on=["pair", "key"], how="outer", indicator=True, suffixes=("_a", "_b"))
    lost = both[both["_merge"] == "left_only"]
    gained = both[both["_merge"] == "right_only"]
    lost_by_pair = _tuples_by_pair(lost["pair"], lost["shown_a"])
    gained_by_pair = _tuples_by_pair(gained["pair"], gained["shown_b"])
    differs = np.zeros(len(aligned), dtype=bool)
    differs[list(lost_by_pair) + list(gained_by_pair)] = True
    change = np.select(
        [(n_a > 0) & (n_b == 0), (n_a == 0) & (n_b > 0), (n_a > 0) & (n_b > 0) & differs],
        [LOST, GAINED, CHANGED], default="",
    )
    keep = np.flatnonzero(change != "")
    result = aligned.iloc[keep].assign(change=change[keep]).reset_index(drop=True)
    result["sources_lost"] = pd.Series([lost_by_pair.get(i, ()) for i in keep.tolist()], dtype=object)
    result["sources_gained"] = pd.Series([gained_by_pair.get(i, ()) for i in keep.tolist()], dtype=object)
    if result.empty:
        return result.reindex(columns=list(_ALIGNMENT_COLUMNS) + ["change", "sources_lost", "sources_gained"])
    return result


def _tuples_by_pair(pairs: pd.Series, shown: pd.Series) -> dict[int, tuple[str, ...]]:
    grouped: dict[int, list[str]] = {}
    for pair, text in zip(pairs.tolist(), shown.tolist(), strict=True):
        grouped.setdefault(pair, []).append(text)
    return {pair: tuple(sorted(texts)) for pair, texts in grouped.items()}
