"""Claim-level citation metrics: coverage, support, gap (SPEC §4.1).

Definitions from the seed "Measure Citation Coverage and Support" as read by
SPEC §4.1, per answer and pooled over answers:

- cited         claim with ``n_citations > 0``
- labeled cited cited claim labeled SUPPORTED or UNSUPPORTED
- pending       cited claim without a label yet (or whose reviewers disagree)
- coverage      cited / claims
- support       SUPPORTED / labeled cited (so a half-labeled run shows a
                provisional support beside its pending count)
- gap           pooled coverage − pooled support
- supported rate SUPPORTED / claims (SPEC §4.3b: Liu et al.'s "citation
                recall", "claims supported by their citations"; equals
                coverage × support when nothing is pending)
- non-factual   a claim marked "not a factual claim" leaves every count
                above and is counted as ``non_factual`` (SPEC §4.3b)

A claim without citations needs no reviewer (it is UNCITED automatically, SPEC
§3), so its label may be UNCITED or null; it is never pending.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from scoring.intervals import AnswerValues, Units
from scoring.labels import (
    LABEL_VALUES,
    SUPPORTED,
    UNSUPPORTED,
    label_codes,
    label_rule_breaks,
    require_columns,
    sort_by,
)
from scoring.lazy import np, pd  # loaded on first use: keeps start-up fast (SPEC §7)
from scoring.ratio import Ratio, gap

CLAIM_COLUMNS = ("answer_id", "question_id", "claim_index", "n_citations", "label")
ANSWER_COLUMNS = ("answer_id", "question_id")
COUNT_COLUMNS = ("claims", "cited", "labeled_cited", "supported", "unsupported", "pending", "non_factual")
_RECORD_KEYS = (
    "question_id",
    "answer_id",
    "claims",
    "cited",
    "labeled_cited",
    "supported",
    "pending",
    "coverage",
    "support",
    "supported_rate",
    "non_factual",
)


@dataclass(frozen=True)
class ClaimMetrics:
    """Coverage and support of a set of answers (SPEC §4.1).

    Counts are ints over the claims of non-abstaining answers. ``coverage`` and
    ``support`` are pooled :class:`~scoring.ratio.Ratio` (value in [0, 1], or
    ``None`` on a zero denominator); ``gap`` = coverage − support, ``None`` if
    either is. ``mean_coverage``/``mean_support`` are the means of the defined
    per-answer values (``None`` when no answer has one), ``*_skipped`` the
    number of answers left out of that mean because their value is undefined
    (no claims, an abstention, or no labeled cited claim).

    ``per_answer`` has one row per answer, sorted by ``question_id`` then
    ``answer_id``: ``answer_id, question_id, claims, cited, labeled_cited,
    supported, unsupported, pending`` (int), ``coverage, support`` (float or
    ``None``, object dtype) and ``abstention`` (bool).
    """

    answers: int
    claims: int
    cited: int
    labeled_cited: int
    supported: int
    unsupported: int
    pending: int
    coverage: Ratio
    support: Ratio
    gap: float | None
    mean_coverage: float | None
    mean_support: float | None
    coverage_skipped: int
    support_skipped: int
    per_answer: pd.DataFrame = field(repr=False, compare=False)
    abstentions: int = 0
    non_factual: int = 0
    mean_supported_rate: float | None = None
    supported_rate_skipped: int = 0

    @property
    def supported_rate(self) -> Ratio:
        """SUPPORTED / factual claims (SPEC §4.3b), ``None`` on no claims."""
        return Ratio(self.supported, self.claims)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready pooled figures: ints, floats in [0, 1] or ``None`` (never NaN)."""
        return {
            "claims": self.claims,
            "cited": self.cited,
            "labeled_cited": self.labeled_cited,
            "supported": self.supported,
            "unsupported": self.unsupported,
            "pending": self.pending,
            "coverage": self.coverage.value,
            "support": self.support.value,
            "gap": self.gap,
            "mean_coverage": self.mean_coverage,
            "mean_support": self.mean_support,
            "coverage_skipped": self.coverage_skipped,
            "support_skipped": self.support_skipped,
            "supported_rate": self.supported_rate.value,
            "mean_supported_rate": self.mean_supported_rate,
            "supported_rate_skipped": self.supported_rate_skipped,
            "non_factual": self.non_factual,
        }

    def units(self) -> dict[str, Units]:
        """Per-answer units of the pooled ratios (SPEC §4.5): ``coverage`` (cited /
        claims), ``support`` (SUPPORTED / labeled cited; its label budget is capped
        by the answers with a cited claim) and ``supported_rate`` (SUPPORTED /
        claims). Abstentions carry no unit."""
        frame = self.per_answer
        could_be_labeled = int((frame["cited"] > 0).sum())
        return {
            "coverage": frame_units(frame, "cited", "claims"),
            "support": frame_units(frame, "supported", "labeled_cited", available=could_be_labeled),
            "supported_rate": frame_units(frame, "supported", "claims"),
        }

    def answer_values(self) -> dict[str, AnswerValues]:
        """Per-answer ``coverage``, ``support`` and ``supported_rate`` (``None`` where
        undefined), whose means are ``mean_*`` (SPEC §4)."""
        return {name: frame_values(self.per_answer, name) for name in ("coverage", "support", "supported_rate")}

    def per_answer_records(self) -> list[dict[str, Any]]:
        """One JSON-ready dict per answer (keys ``question_id, answer_id, claims,
        cited, labeled_cited, supported, pending, coverage, support,
        supported_rate, non_factual``), in
        ``per_answer`` order; undefined ratios are ``None``."""
        return native_records(self.per_answer, _RECORD_KEYS)


def claim_metrics(claims: pd.DataFrame, answers: pd.DataFrame | None = None) -> ClaimMetrics:
    """Coverage, support and gap, pooled and per answer (SPEC §4.1, §4.2).

    ``claims``: one row per claim, columns

    - ``answer_id``   hashable
    - ``question_id`` str
    - ``claim_index`` int, position in the answer (carried, not scored)
    - ``n_citations`` int ≥ 0
    - ``label``       SUPPORTED / UNSUPPORTED / UNCITED, or null = pending
      (e.g. the ``label`` of :func:`scoring.labels.resolve_labels`)
    - ``abstention``  optional bool, per answer: an answer to an unanswerable
      question that cites nothing (``AbstentionMetrics.per_answer.abstained``).
      Its claims are not factual claims (SPEC §4.2, last bullet): they are left
      out of every count, and the answer's coverage and support are ``None``.
      An answer is taken as abstaining when any of its rows says so.
    - ``factual``     optional bool, per claim (null or absent: True). A claim
      marked not factual leaves every count like an abstention's claims and
      is counted in ``non_factual`` (SPEC §4.3b).

    ``answers``: optional, columns ``answer_id, question_id`` (and optionally
    ``abstention``); answers listed here without claims still get a per-answer
    row (0 claims, coverage and support ``None``).

    Raises ``ValueError`` on a missing column, an unknown label value, a null
    or negative ``n_citations``, or a label breaking SPEC §3 (UNCITED on a cited
    claim, SUPPORTED/UNSUPPORTED on a claim without citations).
    """
    require_columns(claims, CLAIM_COLUMNS, name="claims")
    label = label_codes(claims["label"], allow_null=True)
    n_citations = claims["n_citations"]
    if n_citations.isna().any():
        raise ValueError(f"{int(n_citations.isna().sum())} claim(s) have a null n_citations")
    n_citations = n_citations.to_numpy()
    if (n_citations < 0).any():
        raise ValueError(f"{int((n_citations < 0).sum())} claim(s) have a negative n_citations")

    cited = n_citations > 0
    supported = label == LABEL_VALUES.index(SUPPORTED)
    unsupported = label == LABEL_VALUES.index(UNSUPPORTED)
    _check_consistency(claims, label_rule_breaks(label, cited))

    codes, answer_ids = _factorize(claims["answer_id"])
    n_answers = len(answer_ids)

    def per_answer_count(mask: np.ndarray) -> np.ndarray:
        return np.bincount(codes[mask], minlength=n_answers)

    abstaining = per_answer_count(_abstention_flags(claims)) > 0
    marked_factual = _factual_flags(claims)
    factual = ~abstaining[codes] & marked_factual
    first_row = np.unique(codes, return_index=True)[1]

    per_answer = pd.DataFrame(
        {
            "answer_id": answer_ids,
            "question_id": claims["question_id"].to_numpy()[first_row],
            "claims": per_answer_count(factual),
            "cited": per_answer_count(factual & cited),
            "labeled_cited": per_answer_count(factual & cited & (supported | unsupported)),
            "supported": per_answer_count(factual & cited & supported),
            "unsupported": per_answer_count(factual & cited & unsupported),
            "pending": per_answer_count(factual & cited & (label < 0)),
            "non_factual": per_answer_count(~abstaining[codes] & ~marked_factual),
            "abstention": abstaining,
        }
    )
    per_answer = _add_answers_without_claims(per_answer, answers)
    per_answer.insert(9, "coverage", _ratio_column(per_answer["cited"], per_answer["claims"]))
    per_answer.insert(10, "support", _ratio_column(per_answer["supported"], per_answer["labeled_cited"]))
    per_answer.insert(11, "supported_rate", _ratio_column(per_answer["supported"], per_answer["claims"]))
    per_answer = sort_by(per_answer, ["question_id", "answer_id"])

    totals = {column: int(per_answer[column].sum()) for column in COUNT_COLUMNS}
    coverage = Ratio(totals["cited"], totals["claims"])
    support = Ratio(totals["supported"], totals["labeled_cited"])
    mean_coverage, coverage_skipped = mean_of_defined(per_answer["coverage"])
    mean_support, support_skipped = mean_of_defined(per_answer["support"])
    mean_supported_rate, supported_rate_skipped = mean_of_defined(per_answer["supported_rate"])
    return ClaimMetrics(
        answers=len(per_answer),
        **totals,
        coverage=coverage,
        support=support,
        gap=gap(coverage, support),
        mean_coverage=mean_coverage,
        mean_support=mean_support,
        coverage_skipped=coverage_skipped,
        support_skipped=support_skipped,
        per_answer=per_answer,
        abstentions=int(per_answer["abstention"].sum()),
        mean_supported_rate=mean_supported_rate,
        supported_rate_skipped=supported_rate_skipped,
    )


def to_native(value: Any) -> Any:
    """A DataFrame cell as a JSON-ready Python value: numpy scalars unwrapped,
    NaN/pd.NA/None as ``None``."""
    if isinstance(value, np.generic):
        value = value.item()
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return None
    return value


def native_column(values: pd.Series) -> list[Any]:
    """``values`` as a list of JSON-ready Python values, equal to ``[to_native(v) for v
    in values]`` but converted a column at a time (issue 24: per-cell calls cost
    ~150 ms on a 10k-answer page): numpy ints/bools/floats as Python ones, NaN,
    ``pd.NA`` and ``None`` as ``None``."""
    dtype = values.dtype
    if isinstance(dtype, pd.StringDtype) or (isinstance(dtype, pd.api.extensions.ExtensionDtype)
                                             and dtype.kind in "iub"):
        # pandas' text, Int64 and boolean columns: Python str/int/bool, None for NA.
        return values.to_numpy(dtype=object, na_value=None).tolist()
    array = values.to_numpy()
    kind = array.dtype.kind
    if kind in "iub":
        return array.tolist()
    if kind == "f":
        return _with_none(array, np.isnan(array))
    if kind == "O":
        missing = pd.isna(array)
        inferred = pd.api.types.infer_dtype(array, skipna=True)
        if inferred in ("string", "empty"):
            return _with_none(array, missing)
        if inferred == "floating":  # Python or numpy floats, perhaps None: as float64, NaN again None
            return _with_none(np.where(missing, np.nan, array).astype(np.float64), missing)
        if inferred in ("integer", "boolean") and not missing.any():
            try:
                return array.astype(np.int64 if inferred == "integer" else bool).tolist()
            except OverflowError:  # a Python int beyond int64: the cell by cell way keeps it
                pass
    return [to_native(v) for v in values.astype(object).tolist()]


def _with_none(array: np.ndarray, missing: np.ndarray) -> list[Any]:
    """``array.tolist()`` with ``None`` where ``missing``."""
    if not missing.any():
        return array.tolist()
    return np.where(missing, None, array.astype(object)).tolist()


def frame_units(frame: pd.DataFrame, numerator: str, denominator: str, *, available: int | None = None,
                rows: np.ndarray | None = None) -> Units:
    """:class:`~scoring.intervals.Units` of one ratio from a per-answer frame with
    ``question_id`` and the two count columns (NA counts read as 0: no unit).
    ``rows``: an optional bool mask of the answers in scope."""
    if rows is not None:
        frame = frame[rows]
    y = pd.to_numeric(frame[numerator]).fillna(0).to_numpy(dtype="int64")
    x = pd.to_numeric(frame[denominator]).fillna(0).to_numpy(dtype="int64")
    # A pending answer may know its denominator (context citations) but not its numerator.
    x = np.where(frame[numerator].isna().to_numpy(), 0, x)
    return Units(_question_names(frame), tuple(y.tolist()), tuple(x.tolist()), available)


def frame_values(frame: pd.DataFrame, column: str, *, rows: np.ndarray | None = None) -> AnswerValues:
    """:class:`~scoring.intervals.AnswerValues` of a per-answer ratio column (``None``/NA: undefined)."""
    if rows is not None:
        frame = frame[rows]
    return AnswerValues(_question_names(frame), tuple(native_column(frame[column])))


def _question_names(frame: pd.DataFrame) -> tuple[str, ...]:
    """``str`` of each ``question_id`` (the names runs pair by)."""
    ids = frame["question_id"]
    if isinstance(ids.dtype, pd.StringDtype) and not ids.hasnans:
        return tuple(ids.tolist())  # already str: nothing to convert
    return tuple(str(q) for q in ids.tolist())


def native_records(frame: pd.DataFrame, columns: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """``frame``'s rows as JSON-ready dicts (``columns`` only, in that order, when
    given), every cell as :func:`to_native` reads it (:func:`native_column`)."""
    keys = list(frame.columns if columns is None else columns)
    values = [native_column(frame[key]) for key in keys]
    return [dict(zip(keys, row, strict=True)) for row in zip(*values, strict=True)]


def _check_consistency(claims: pd.DataFrame, bad: np.ndarray) -> None:
    # Scoring a label that contradicts the citations would silently drop the
    # claim from both support counts; the product forbids it (SPEC §3).
    if bad.any():
        rows = claims.loc[bad, ["answer_id", "claim_index", "n_citations", "label"]].head(5)
        shown = "; ".join(
            f"answer {a!r} claim {i!r}: {n} citation(s), {lab}" for a, i, n, lab in rows.itertuples(index=False)
        )
        raise ValueError(f"{int(bad.sum())} claim(s) break 'UNCITED if and only if no citation' (SPEC §3): {shown}")


def _factorize(ids: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    try:
        codes, uniques = pd.factorize(ids, sort=True)
    except TypeError:  # ids of mixed types cannot be sorted
        codes, uniques = pd.factorize(ids, sort=False)
    if (codes < 0).any():
        raise ValueError("claims frame has row(s) without an answer_id")
    return codes, np.asarray(uniques)


def _add_answers_without_claims(per_answer: pd.DataFrame, answers: pd.DataFrame | None) -> pd.DataFrame:
    if answers is None:
        return per_answer
    require_columns(answers, ANSWER_COLUMNS, name="answers")
    missing = answers[~answers["answer_id"].isin(per_answer["answer_id"])]
    missing = missing.drop_duplicates("answer_id")
    if missing.empty:
        return per_answer
    empty = pd.DataFrame(
        {
            "answer_id": missing["answer_id"].to_numpy(),
            "question_id": missing["question_id"].to_numpy(),
            **{column: np.zeros(len(missing), dtype="int64") for column in COUNT_COLUMNS},
            "abstention": _abstention_flags(missing),
        }
    )
    if per_answer.empty:
        return empty
    return pd.concat([per_answer, empty], ignore_index=True)


def _abstention_flags(frame: pd.DataFrame) -> np.ndarray:
    """The optional ``abstention`` column as bools (absent or null: False)."""
    if "abstention" not in frame.columns:
        return np.zeros(len(frame), dtype=bool)
    return frame["abstention"].astype("boolean").fillna(False).to_numpy(dtype=bool)


def _factual_flags(frame: pd.DataFrame) -> np.ndarray:
    """The optional ``factual`` column as bools (absent or null: True)."""
    if "factual" not in frame.columns:
        return np.ones(len(frame), dtype=bool)
    return frame["factual"].astype("boolean").fillna(True).to_numpy(dtype=bool)


def _ratio_column(numerator: pd.Series, denominator: pd.Series) -> np.ndarray:
    """Per-answer ratio as an object array: float in [0, 1], ``None`` on 0/0."""
    num = numerator.to_numpy(dtype="int64")
    den = denominator.to_numpy(dtype="int64")
    out = np.full(len(num), None, dtype=object)
    defined = den > 0
    out[defined] = num[defined] / den[defined]
    return out


def mean_of_defined(values: pd.Series) -> tuple[float | None, int]:
    """Per-answer mean (SPEC §4): (mean of the non-null values, number of nulls
    skipped). The mean is ``None`` when every value is null (or none is given)."""
    defined = [value for value in values.tolist() if value is not None]
    skipped = len(values) - len(defined)
    if not defined:
        return None, skipped
    # fsum: exactly 1.0 when every answer scores 1.0, no drift over 100k answers
    return math.fsum(defined) / len(defined), skipped
