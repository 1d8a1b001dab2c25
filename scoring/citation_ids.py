"""Cited passage ids against gold supporting ids, fabricated ids, abstention
(SPEC §4.2; seed "Citation Precision and Recall").

Input frames:

- ``answers``: one row per answer, ``answer_id`` (hashable, unique),
  ``question_id`` (str), ``has_gold`` (bool: the question carries gold
  supporting ids, possibly an empty list), ``answerable`` (True/False/None;
  only :func:`abstention_metrics` reads it).
- ``citations``: one row per citation of any claim, ``answer_id``,
  ``passage_id`` (str, the id as cited), ``fabricated`` (bool: the id is not
  among the passages sent with that answer, flagged at import). Duplicates
  are expected (one id cited twice in a claim, or by two claims).
- ``gold_ids``: ``answer_id``, ``passage_id``, the question's gold supporting
  ids repeated for each answer of that question.

Ids are compared as de-duplicated sets of exact strings per answer; order
never matters.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from scoring.claims import frame_units, frame_values, mean_of_defined, native_records
from scoring.intervals import AnswerValues, Units
from scoring.labels import require_columns, sort_by
from scoring.lazy import np, pd  # loaded on first use: keeps start-up fast (SPEC §7)
from scoring.ratio import Ratio

ANSWER_COLUMNS = ("answer_id", "question_id", "has_gold")
CITATION_COLUMNS = ("answer_id", "passage_id", "fabricated")
GOLD_COLUMNS = ("answer_id", "passage_id")


@dataclass(frozen=True)
class CitationIdMetrics:
    """Citation precision/recall against gold ids, and fabricated ids (SPEC §4.2).

    ``tp``/``fp``/``fn`` are pooled over the ``gold_answers`` answers that have
    gold; ``precision`` = tp/(tp+fp) and ``recall`` = tp/(tp+fn) are
    :class:`~scoring.ratio.Ratio` (value in [0, 1], ``None`` on 0/0).
    ``mean_precision``/``mean_recall`` average the defined per-answer values
    over answers with gold (``None`` if none is defined); ``*_skipped`` count
    the answers with gold whose value is undefined (nothing cited; no gold id).

    ``fabricated`` counts distinct (answer, id) pairs flagged fabricated over
    ALL answers, ``distinct_cited`` all distinct cited (answer, id) pairs, and
    ``fabricated_rate`` = fabricated / distinct_cited.

    ``per_answer``: one row per answer, sorted by ``question_id`` then
    ``answer_id``: ``answer_id, question_id, has_gold`` (bool), ``cited``,
    ``fabricated`` (int, distinct ids), ``gold, tp, fp, fn`` (nullable Int64,
    ``pd.NA`` without gold), ``precision, recall`` (float or ``None``, object).
    """

    gold_answers: int
    tp: int
    fp: int
    fn: int
    precision: Ratio
    recall: Ratio
    mean_precision: float | None
    mean_recall: float | None
    precision_skipped: int
    recall_skipped: int
    fabricated: int
    fabricated_rate: Ratio
    distinct_cited: int
    per_answer: pd.DataFrame = field(repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready pooled figures: ints, floats in [0, 1] or ``None`` (never NaN)."""
        return {
            "tp": self.tp,
            "fp": self.fp,
            "fn": self.fn,
            "precision": self.precision.value,
            "recall": self.recall.value,
            "mean_precision": self.mean_precision,
            "mean_recall": self.mean_recall,
            "fabricated": self.fabricated,
            "fabricated_rate": self.fabricated_rate.value,
            "distinct_cited": self.distinct_cited,
        }

    def per_answer_records(self) -> list[dict[str, Any]]:
        """``per_answer`` as JSON-ready dicts (``pd.NA``/NaN as ``None``)."""
        return native_records(self.per_answer)

    def units(self) -> dict[str, Units]:
        """Per-answer units (SPEC §4.5): ``precision`` (tp / tp + fp) and ``recall``
        (tp / tp + fn) over the answers with gold, ``fabricated_rate`` (fabricated /
        distinct cited ids) over every answer."""
        frame = self.per_answer
        with_gold = frame["has_gold"].to_numpy(dtype=bool)
        scored = frame.assign(
            cited_ids=pd.to_numeric(frame["tp"]) + pd.to_numeric(frame["fp"]),
            gold_ids=pd.to_numeric(frame["tp"]) + pd.to_numeric(frame["fn"]),
        )
        return {
            "precision": frame_units(scored, "tp", "cited_ids", rows=with_gold),
            "recall": frame_units(scored, "tp", "gold_ids", rows=with_gold),
            "fabricated_rate": frame_units(frame, "fabricated", "cited"),
        }

    def answer_values(self) -> dict[str, AnswerValues]:
        """Per-answer ``precision`` and ``recall`` of the answers with gold."""
        with_gold = self.per_answer["has_gold"].to_numpy(dtype=bool)
        return {name: frame_values(self.per_answer, name, rows=with_gold) for name in ("precision", "recall")}


@dataclass(frozen=True)
class AbstentionMetrics:
    """How often answers to unanswerable questions cite nothing (SPEC §4.2).

    ``unanswerable``: answers whose question has ``answerable == False``
    (``None`` = unknown is not unanswerable); ``abstained``: those of them with
    zero citations; ``rate`` = abstained / unanswerable (``None`` when there is
    no unanswerable question).

    ``per_answer``: one row per answer, sorted by ``question_id`` then
    ``answer_id``: ``answer_id, question_id, unanswerable`` (bool),
    ``citations`` (int, citation rows, duplicates included), ``abstained``
    (bool) — the ``abstention`` column that :func:`scoring.claims.claim_metrics`
    takes.
    """

    unanswerable: int
    abstained: int
    rate: Ratio
    per_answer: pd.DataFrame = field(repr=False, compare=False)

    def units(self) -> dict[str, Units]:
        """Per-answer units of ``abstention`` (abstained / unanswerable: one unit per
        answer to an unanswerable question, SPEC §4.5)."""
        frame = self.per_answer.assign(
            abstained_units=self.per_answer["abstained"].astype("int64"),
            unanswerable_units=self.per_answer["unanswerable"].astype("int64"),
        )
        return {"abstention": frame_units(frame, "abstained_units", "unanswerable_units")}

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready figures: ``{"unanswerable", "abstained", "rate"}``."""
        return {
            "unanswerable": self.unanswerable,
            "abstained": self.abstained,
            "rate": self.rate.value,
        }


def citation_id_metrics(answers: pd.DataFrame, citations: pd.DataFrame, gold_ids: pd.DataFrame) -> CitationIdMetrics:
    """Citation precision and recall of cited ids vs gold ids, plus fabricated ids.

    Frames as in the module docstring. Per answer with ``has_gold``: ``cited``
    = set of cited ids, ``gold`` = set of gold ids, ``tp = |cited ∩ gold|``
    counting only ids that are not fabricated, ``fp = |cited| − tp``, ``fn =
    |gold| − tp`` (SPEC §4.2, seed "Citation Precision and Recall").

    A fabricated id never counts as a true positive even when gold lists it
    (the system was never sent that passage, so it could not have read it;
    SPEC §4.2): it counts as a false positive, and the gold id stays a false
    negative. If an id is flagged fabricated on any of its citations in an
    answer, it is fabricated for that answer. Answers without gold add nothing
    to tp/fp/fn but do count for ``fabricated``. An answer to an unanswerable
    question with gold = [] has fn = 0 and every id it cites is a false
    positive.

    Raises ``ValueError`` on a missing column, a duplicated ``answer_id`` in
    ``answers``, a citation or gold row for an answer not in ``answers``, a null
    ``passage_id``, or gold ids on an answer whose ``has_gold`` is False.
    """
    require_columns(answers, ANSWER_COLUMNS, name="answers")
    require_columns(citations, CITATION_COLUMNS, name="citations")
    require_columns(gold_ids, GOLD_COLUMNS, name="gold_ids")
    _check_answer_ids(answers)
    _check_known(citations, answers, name="citations")
    _check_known(gold_ids, answers, name="gold_ids")

    has_gold = _flag(answers["has_gold"])
    gold_answer_ids = answers.loc[has_gold, "answer_id"]
    stray = ~gold_ids["answer_id"].isin(gold_answer_ids)
    if stray.any():
        shown = _show(gold_ids.loc[stray, "answer_id"])
        raise ValueError(f"gold_ids has rows for answer(s) whose has_gold is False: {shown}")

    cited = _distinct_ids(citations, name="citations")
    cited["fabricated"] = _flag(citations["fabricated"])
    cited = cited.groupby(["answer_id", "passage_id"], sort=False, as_index=False)["fabricated"].any()
    gold = _distinct_ids(gold_ids, name="gold_ids").drop_duplicates()

    matched = cited.merge(gold, on=["answer_id", "passage_id"], how="left", indicator=True)
    true_positive = matched["_merge"].eq("both") & ~matched["fabricated"]

    answer_ids = answers["answer_id"]
    n_cited = _count_per_answer(cited["answer_id"], answer_ids)
    n_fabricated = _count_per_answer(cited.loc[cited["fabricated"], "answer_id"], answer_ids)
    n_gold = _count_per_answer(gold["answer_id"], answer_ids)
    tp = _count_per_answer(matched.loc[true_positive, "answer_id"], answer_ids)
    fp = n_cited - tp
    fn = n_gold - tp

    def only_with_gold(counts: np.ndarray) -> pd.Series:
        return pd.Series(counts, dtype="Int64").where(has_gold, pd.NA)

    per_answer = pd.DataFrame(
        {
            "answer_id": answer_ids.to_numpy(),
            "question_id": answers["question_id"].to_numpy(),
            "has_gold": has_gold,
            "cited": n_cited,
            "fabricated": n_fabricated,
            "gold": only_with_gold(n_gold),
            "tp": only_with_gold(tp),
            "fp": only_with_gold(fp),
            "fn": only_with_gold(fn),
            "precision": _ratio_column(tp, tp + fp, has_gold),
            "recall": _ratio_column(tp, tp + fn, has_gold),
        }
    )
    per_answer = sort_by(per_answer, ["question_id", "answer_id"])

    pooled_tp, pooled_fp, pooled_fn = (int(c[has_gold].sum()) for c in (tp, fp, fn))
    scored = per_answer[per_answer["has_gold"]]
    mean_precision, precision_skipped = mean_of_defined(scored["precision"])
    mean_recall, recall_skipped = mean_of_defined(scored["recall"])
    fabricated = int(n_fabricated.sum())
    distinct_cited = int(n_cited.sum())
    return CitationIdMetrics(
        gold_answers=int(has_gold.sum()),
        tp=pooled_tp,
        fp=pooled_fp,
        fn=pooled_fn,
        precision=Ratio(pooled_tp, pooled_tp + pooled_fp),
        recall=Ratio(pooled_tp, pooled_tp + pooled_fn),
        mean_precision=mean_precision,
        mean_recall=mean_recall,
        precision_skipped=precision_skipped,
        recall_skipped=recall_skipped,
        fabricated=fabricated,
        fabricated_rate=Ratio(fabricated, distinct_cited),
        distinct_cited=distinct_cited,
        per_answer=per_answer,
    )


def abstention_metrics(answers: pd.DataFrame, citations: pd.DataFrame) -> AbstentionMetrics:
    """Abstention on unanswerable questions (SPEC §4.2, seed "Citation Precision
    and Recall": "answers to unanswerable questions should cite nothing").

    In: ``answers`` with ``answer_id, question_id, answerable``; ``citations``
    with ``answer_id`` (other columns ignored; a fabricated citation is still a
    citation). Out: :class:`AbstentionMetrics`.

    Raises ``ValueError`` on a missing column, a duplicated ``answer_id``, or a
    citation of an answer not in ``answers``.
    """
    require_columns(answers, ("answer_id", "question_id", "answerable"), name="answers")
    require_columns(citations, ("answer_id",), name="citations")
    _check_answer_ids(answers)
    _check_known(citations, answers, name="citations")

    # answerable is True/False/None: only an explicit False marks an unanswerable question.
    unanswerable = answers["answerable"].astype("boolean").eq(False).fillna(False)
    unanswerable = unanswerable.to_numpy(dtype=bool)
    n_citations = _count_per_answer(citations["answer_id"], answers["answer_id"])
    abstained = unanswerable & (n_citations == 0)
    per_answer = pd.DataFrame(
        {
            "answer_id": answers["answer_id"].to_numpy(),
            "question_id": answers["question_id"].to_numpy(),
            "unanswerable": unanswerable,
            "citations": n_citations,
            "abstained": abstained,
        }
    )
    return AbstentionMetrics(
        unanswerable=int(unanswerable.sum()),
        abstained=int(abstained.sum()),
        rate=Ratio(int(abstained.sum()), int(unanswerable.sum())),
        per_answer=sort_by(per_answer, ["question_id", "answer_id"]),
    )


def _flag(values: pd.Series) -> np.ndarray:
    """A bool column as a numpy bool array, null read as False."""
    return values.astype("boolean").fillna(False).to_numpy(dtype=bool)


def _show(ids: pd.Series) -> str:
    """The first few distinct ids for an error message."""
    return ", ".join(repr(value) for value in ids.drop_duplicates().head(5).tolist())


def _check_answer_ids(answers: pd.DataFrame) -> None:
    twice = answers["answer_id"].duplicated()
    if twice.any():
        shown = _show(answers.loc[twice, "answer_id"])
        raise ValueError(f"answers frame lists answer_id(s) more than once: {shown}")


def _check_known(frame: pd.DataFrame, answers: pd.DataFrame, *, name: str) -> None:
    unknown = ~frame["answer_id"].isin(answers["answer_id"])
    if unknown.any():
        shown = _show(frame.loc[unknown, "answer_id"])
        raise ValueError(f"{name} frame has rows for answer(s) not in answers: {shown}")


def _distinct_ids(frame: pd.DataFrame, *, name: str) -> pd.DataFrame:
    if frame["passage_id"].isna().any():
        raise ValueError(f"{name} frame has row(s) without a passage_id")
    return pd.DataFrame(
        {
            "answer_id": frame["answer_id"].to_numpy(),
            # ids are compared as the strings the answer cites ("3" and 3 are one id)
            "passage_id": frame["passage_id"].astype(str).to_numpy(),
        }
    )


def _count_per_answer(rows_answer_id: pd.Series, answer_ids: pd.Series) -> np.ndarray:
    """Rows per answer, aligned with ``answer_ids`` (0 where none)."""
    counts = rows_answer_id.value_counts()
    return counts.reindex(answer_ids.to_numpy(), fill_value=0).to_numpy(dtype="int64")


def _ratio_column(numerator: np.ndarray, denominator: np.ndarray, scope: np.ndarray) -> np.ndarray:
    """Per-answer ratio as an object array: float in [0, 1], ``None`` on 0/0 or out of scope."""
    out = np.full(len(numerator), None, dtype=object)
    defined = scope & (denominator > 0)
    out[defined] = numerator[defined] / denominator[defined]
    return out
