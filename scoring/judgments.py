"""Per-citation judgments and citation precision without gold (SPEC §4.3b).

Definitions from Liu, Zhang & Liang 2023 ("Evaluating Verifiability in
Generative Search Engines") and ALCE (Gao et al. 2023), as SPEC §4.3b reads
them. A reviewer judges each citation of a cited claim:

- ``FULL``         the cited passage alone entails the claim
- ``PARTIAL``      it carries part of the claim
- ``NONE``         it does not support the claim
- ``UNJUDGEABLE``  the passage is inaccessible or the claim unclear

Citation precision = precise citations / judged citations, where *precise*
depends on the rule:

- ``strict``   FULL only
- ``union``    FULL, or PARTIAL when the claim's label is SUPPORTED (the union
               of its partial citations entails it; the default)
- ``lenient``  FULL or PARTIAL

NONE and UNJUDGEABLE are never precise. Citations of non-factual claims (a
greeting, a hedge, the question restated) and of abstaining answers leave
every count, as those claims leave coverage and support (SPEC §4.1, §4.2).

The judgments frame: one row per citation, columns

- ``citation_id`` hashable, the citation's stable id
- ``claim_id``    the claim it belongs to
- ``judgment``    FULL / PARTIAL / NONE / UNJUDGEABLE, or null = not judged
                  (or disputed, see :func:`resolve_judgments`)

This module never imports Django.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from scoring.claims import frame_units, frame_values, mean_of_defined, native_records
from scoring.intervals import AnswerValues, Units
from scoring.labels import SUPPORTED, UNSUPPORTED, require_columns, sort_by
from scoring.lazy import np, pd  # loaded on first use: keeps start-up fast (SPEC §7)
from scoring.ratio import Ratio

FULL = "FULL"
PARTIAL = "PARTIAL"
NONE = "NONE"
UNJUDGEABLE = "UNJUDGEABLE"
JUDGMENTS = (FULL, PARTIAL, NONE, UNJUDGEABLE)

STRICT = "strict"
UNION = "union"
LENIENT = "lenient"
RULES = (STRICT, UNION, LENIENT)
DEFAULT_RULE = UNION

JUDGMENT_COLUMNS = ("citation_id", "claim_id", "judgment")
CLAIM_COLUMNS = ("claim_id", "answer_id", "question_id", "label")


def check_judgment(value: Any) -> str:
    """``value`` as a judgment (surrounding spaces and case forgiven), or ``ValueError``
    naming the four values."""
    text = str(value).strip().upper() if isinstance(value, str) else value
    if text not in JUDGMENTS:
        raise ValueError(f"unknown judgment {value!r}: use one of {', '.join(JUDGMENTS)}")
    return text


def check_rule(rule: str) -> str:
    """``rule`` if it names a precision rule, else ``ValueError`` naming the three."""
    if rule not in RULES:
        raise ValueError(f"unknown citation precision rule {rule!r}: use one of {', '.join(RULES)}")
    return rule


def proposed_label(judgments: Iterable[str | None], *, partials_enough: bool = False) -> str | None:
    """The claim label its citations' judgments propose (SPEC §4.3b, the review page).

    ``judgments``: one per citation of the claim (``None`` = not judged yet).
    Returns ``None`` until every citation is judged; then ``SUPPORTED`` when
    any citation is FULL, or when some are PARTIAL and ``partials_enough``
    (the reviewer judged their union to entail the claim); else
    ``UNSUPPORTED``. A claim without citations proposes nothing (it is UNCITED).
    """
    values = list(judgments)
    if not values or any(value is None for value in values):
        return None
    if FULL in values or (partials_enough and PARTIAL in values):
        return SUPPORTED
    return UNSUPPORTED


def precise_mask(judgment: pd.Series, claim_label: pd.Series, rule: str) -> np.ndarray:
    """True where a citation is precise under ``rule`` (aligned Series of judgments
    and the labels of their claims; nulls are never precise)."""
    check_rule(rule)
    full = (judgment == FULL).to_numpy(dtype=bool)
    partial = (judgment == PARTIAL).to_numpy(dtype=bool)
    if rule == STRICT:
        return full
    if rule == LENIENT:
        return full | partial
    return full | (partial & (claim_label == SUPPORTED).to_numpy(dtype=bool))


def resolve_judgments(judgments: pd.DataFrame, *, reviewer: str | None = None) -> pd.DataFrame:
    """One judgment per citation from reviewers' current judgments (SPEC §4.4 read for citations).

    ``judgments``: columns ``citation_id, reviewer, judgment`` (one row per
    current judgment of one reviewer). With ``reviewer`` only that reviewer's
    count. A citation whose reviewers all give one value takes it; differing
    values leave it ``None`` with ``disputed`` True. Returns columns
    ``citation_id, judgment, disputed``, one row per judged citation.
    Raises ``ValueError`` on a missing column or an unknown judgment.
    """
    require_columns(judgments, ("citation_id", "reviewer", "judgment"), name="judgments")
    frame = judgments
    if reviewer is not None:
        frame = frame[frame["reviewer"] == reviewer]
    unknown = sorted({str(v) for v in frame["judgment"].dropna().unique()} - set(JUDGMENTS))
    if unknown:
        raise ValueError(f"unknown judgment value(s) {', '.join(unknown)}: use one of {', '.join(JUDGMENTS)}")
    if frame.empty:
        return pd.DataFrame({"citation_id": [], "judgment": [], "disputed": []}).astype({"disputed": bool})
    grouped = frame.groupby("citation_id", sort=True)["judgment"].agg(["nunique", "first"]).reset_index()
    disputed = grouped["nunique"] > 1
    return pd.DataFrame({
        "citation_id": grouped["citation_id"],
        "judgment": grouped["first"].astype(object).where(~disputed, None),
        "disputed": disputed.to_numpy(dtype=bool),
    })


@dataclass(frozen=True)
class JudgmentMetrics:
    """Citation precision from per-citation judgments (SPEC §4.3b).

    Counts are over the citations of factual claims of non-abstaining answers:
    ``citations`` all of them, ``judged`` those with a judgment, ``disputed``
    those whose reviewers differ (not judged), ``counts`` judged citations per
    judgment, ``precise`` those precise under ``rule``. ``precision`` =
    precise / judged (``Ratio``: exact, ``None`` when nothing is judged);
    ``mean_precision`` the mean of the per-answer precisions of answers with a
    judged citation (``precision_skipped`` answers left out). ``per_answer``:
    ``answer_id, question_id, judged, precise`` (int), ``precision`` (float or
    ``None``), sorted by ``question_id`` then ``answer_id``.
    """

    rule: str
    citations: int
    judged: int
    disputed: int
    counts: dict[str, int]
    precise: int
    precision: Ratio
    mean_precision: float | None
    precision_skipped: int
    per_answer: pd.DataFrame = field(repr=False, compare=False)

    @property
    def unjudged(self) -> int:
        return self.citations - self.judged

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the rule's name, ints, precision in [0, 1] or ``None``, and
        the exact fraction as ``"precise/judged"``."""
        return {
            "rule": self.rule,
            "citations": self.citations,
            "judged": self.judged,
            "unjudged": self.unjudged,
            "disputed": self.disputed,
            "counts": dict(self.counts),
            "precise": self.precise,
            "precision": self.precision.value,
            "precision_fraction": f"{self.precision.numerator}/{self.precision.denominator}",
            "mean_precision": self.mean_precision,
            "precision_skipped": self.precision_skipped,
        }

    def units(self, *, available: int | None = None) -> dict[str, Units]:
        """Per-answer units of ``judged_precision`` (precise / judged citations, SPEC
        §4.5); ``available``: answers that could be judged (the label budget's cap)."""
        return {"judged_precision": frame_units(self.per_answer, "precise", "judged", available=available)}

    def answer_values(self) -> dict[str, AnswerValues]:
        """Per-answer ``judged_precision`` (``None`` where nothing is judged)."""
        return {"judged_precision": frame_values(self.per_answer, "precision")}

    def per_answer_records(self) -> list[dict[str, Any]]:
        """One dict per answer: ``answer_id, judged, precise, precision``."""
        return native_records(self.per_answer, ("answer_id", "judged", "precise", "precision"))


def citation_judgments(claims: pd.DataFrame, judgments: pd.DataFrame, *, rule: str = DEFAULT_RULE) -> JudgmentMetrics:
    """Citation precision of a set of answers under ``rule`` (SPEC §4.3b), pooled and per answer.

    ``claims``: one row per claim, columns ``claim_id, answer_id, question_id,
    label`` (the label that counts, or null = pending: the union rule reads
    it), optional ``factual`` (bool, default True) and ``abstention`` (bool).
    ``judgments``: one row per citation (see the module docstring), optional
    ``disputed`` (bool). Citations of claims not in ``claims``, of
    non-factual claims or of abstaining answers are left out.

    Raises ``ValueError`` on a missing column, an unknown judgment or rule.
    """
    check_rule(rule)
    require_columns(claims, CLAIM_COLUMNS, name="claims")
    require_columns(judgments, JUDGMENT_COLUMNS, name="judgments")
    unknown = sorted({str(v) for v in judgments["judgment"].dropna().unique()} - set(JUDGMENTS))
    if unknown:
        raise ValueError(f"unknown judgment value(s) {', '.join(unknown)}: use one of {', '.join(JUDGMENTS)}")
    kept = claims
    if "factual" in kept.columns:
        kept = kept[kept["factual"].astype("boolean").fillna(True).to_numpy(dtype=bool)]
    if "abstention" in kept.columns:
        kept = kept[~kept["abstention"].astype("boolean").fillna(False).to_numpy(dtype=bool)]
    answers = claims[["answer_id", "question_id"]].drop_duplicates("answer_id")
    rows = judgments.merge(kept[["claim_id", "answer_id", "label"]], on="claim_id", how="inner")
    judgment = rows["judgment"]
    judged = judgment.notna().to_numpy(dtype=bool)
    precise = precise_mask(judgment, rows["label"], rule)
    disputed = (rows["disputed"].astype("boolean").fillna(False).to_numpy(dtype=bool)
                if "disputed" in rows.columns else np.zeros(len(rows), dtype=bool))
    per_answer = pd.DataFrame({"answer_id": rows["answer_id"], "judged": judged.astype("int64"),
                               "precise": precise.astype("int64")})
    per_answer = per_answer.groupby("answer_id", sort=False)[["judged", "precise"]].sum().reset_index()
    per_answer = answers.merge(per_answer, on="answer_id", how="left")
    per_answer[["judged", "precise"]] = per_answer[["judged", "precise"]].fillna(0).astype("int64")
    precision_column = np.full(len(per_answer), None, dtype=object)
    defined = per_answer["judged"].to_numpy() > 0
    precision_column[defined] = per_answer["precise"].to_numpy()[defined] / per_answer["judged"].to_numpy()[defined]
    per_answer["precision"] = precision_column
    per_answer = sort_by(per_answer, ["question_id", "answer_id"])
    # Answers with no judged citation have no precision: they are skipped from the mean, not counted as 0.
    mean, _ = mean_of_defined(per_answer["precision"])
    n_judged, n_precise = int(judged.sum()), int(precise.sum())
    return JudgmentMetrics(
        rule=rule,
        citations=len(rows),
        judged=n_judged,
        disputed=int(disputed.sum()),
        counts={value: int((judgment == value).sum()) for value in JUDGMENTS},
        precise=n_precise,
        precision=Ratio(n_precise, n_judged),
        mean_precision=mean,
        precision_skipped=int((~defined).sum()),
        per_answer=per_answer,
    )
