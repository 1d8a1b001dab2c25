"""Grading an automated labeler (a judge) against the human labels (SPEC §4.4,
SPEC §4.4): "Do not automate before you can grade the automation" (seed
"Measure Citation Coverage and Support").

In:

- ``reference``: the label that counts for each cited claim — the lead's
  adjudication, else the label its human reviewers agree on (or one named
  human's labels). Columns ``claim_id`` (int), ``label`` (SUPPORTED or
  UNSUPPORTED), optional ``justification`` (str).
- ``judge``: the judge's labels. Columns ``claim_id``, ``label``, optional
  ``reason`` (the judge's justification).
- ``claims`` (optional): ``claim_id``, ``claim`` (text), ``cited_chars`` (int:
  characters of the cited text — the spans, else the passages — the judge
  read), for the borderline ordering of the disagreements; or a function
  given the disagreeing claim ids (list of int) that returns that frame for
  them, so a caller reads the texts of the disagreements only. Optional
  columns ``reason`` and ``justification`` there replace the judge's reasons
  and the reference's justifications (a caller that reads those for the
  disagreements only leaves them out of ``judge`` and ``reference``).

Figures, on the claims both labeled (``n``):

- raw agreement and Cohen's kappa, exact from the integer confusion matrix
  (as :mod:`scoring.agreement`), with its 95 % interval
  ``kappa ± 1.959964 · SE``, SE the large-sample standard error of Fleiss,
  Cohen & Everitt (1969) as ``statsmodels.stats.inter_rater.cohens_kappa``
  computes it (SAS PROC FREQ's "ASE"): with p_ij the cell shares, p_i. and
  p_.j the margins, p_o the agreement and p_e = Σ p_i. p_.i,
  var = [Σ_i p_ii (1 − (p_i. + p_.i)(1 − κ))² + (1 − κ)² Σ_{i≠j} p_ij
  (p_.i + p_j.)² − (κ − p_e (1 − κ))²] / ((1 − p_e)² n). The interval is
  clipped to [-1, 1] and ``None`` when kappa is undefined (n = 0, or p_e = 1).
- the judge's UNSUPPORTED calls, the label that matters: precision = claims
  both call UNSUPPORTED / claims the judge calls UNSUPPORTED; recall = the
  same / claims the humans call UNSUPPORTED; F1 their harmonic mean (``None``
  if either is undefined, 0 if both are 0, SPEC §4.3). A human UNSUPPORTED
  that the judge calls SUPPORTED is the expensive error (a decorative
  citation let through): ``missed_unsupported``.
- the confusion matrix (rows: the humans' label, columns: the judge's) and
  the disagreements, borderline first: a claim is borderline for each of
  these signs — it contains a number (a digit outside its citation
  markers: ``[3]``, ``[P1]``, ``【4】`` name passages, not quantities;
  ``scoring.normalize.strip_markers``), the cited text is long
  (≥ :data:`LONG_CITED_CHARS` characters), the human justification speaks of
  partial support ("partial", "partly", "incomplete"); more signs first,
  then claim id.
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from scoring.labels import SUPPORTED, UNSUPPORTED
from scoring.lazy import np, pd  # loaded on first use: keeps start-up fast (SPEC §7)
from scoring.normalize import strip_markers
from scoring.ratio import Ratio

CATEGORIES = (SUPPORTED, UNSUPPORTED)
# About 100 English words: the judge has to find the entailing sentence in a page, not a line.
LONG_CITED_CHARS = 600
Z_95 = 1.959963984540054
_NUMBER = re.compile(r"\d")
_PARTIAL = re.compile(r"partial|partly|incomplete", re.IGNORECASE)
BORDERLINE_SIGNS = ("number", "long cited text", "partial support")


@dataclass(frozen=True)
class JudgeGrade:
    """A judge graded against a reference (module docstring for every figure).

    ``n``: claims both labeled. ``reference_only``: claims the reference
    labeled that the judge did not (its pending claims). ``confusion``: int
    DataFrame, index = reference label, columns = judge label, both
    SUPPORTED, UNSUPPORTED. ``disagreements``: ``claim_id, reference, judge,
    claim, reason, justification, borderline`` (list of the signs), borderline
    first.
    """

    judge: str
    reference: str
    n: int
    reference_only: int
    agreement: Ratio
    kappa: float | None
    kappa_se: float | None
    kappa_ci95: tuple[float, float] | None
    precision: Ratio
    recall: Ratio
    f1: float | None
    missed_unsupported: int
    confusion: pd.DataFrame = field(repr=False, compare=False)
    disagreements: pd.DataFrame = field(repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: every figure, ratios as ``{"value", "numerator", "denominator"}``,
        ``confusion`` as ``{reference label: {judge label: count}}`` and the
        disagreements as a list of objects."""
        return {
            "judge": self.judge, "reference": self.reference, "n": self.n, "reference_only": self.reference_only,
            "agreement": _ratio(self.agreement), "kappa": self.kappa, "kappa_se": self.kappa_se,
            "kappa_ci95": None if self.kappa_ci95 is None else list(self.kappa_ci95),
            "unsupported": {"precision": _ratio(self.precision), "recall": _ratio(self.recall), "f1": self.f1},
            "missed_unsupported": self.missed_unsupported,
            "confusion": {row: {col: int(count) for col, count in counts.items()}
                          for row, counts in self.confusion.to_dict("index").items()},
            "disagreements": self.disagreement_records(),
        }

    def disagreement_records(self, start: int = 0, stop: int | None = None) -> list[dict[str, Any]]:
        """The disagreements ``start:stop`` (all by default) as ``to_dict`` gives them: a page
        of them reads that page's rows only."""
        rows = self.disagreements.iloc[start:stop]
        return [
            {"claim_id": int(claim_id), "reference": reference, "judge": judge, "claim": claim, "reason": reason,
             "justification": justification, "borderline": list(borderline)}
            # Column by column: itertuples walked pandas 3's Arrow strings value by value.
            for claim_id, reference, judge, claim, reason, justification, borderline in zip(*(
                rows[name].tolist() for name in (
                    "claim_id", "reference", "judge", "claim", "reason", "justification", "borderline")),
                strict=True)
        ]


def _ratio(ratio: Ratio) -> dict[str, Any]:
    return {"value": ratio.value, "numerator": ratio.numerator, "denominator": ratio.denominator}


def borderline_signs(claim: str, cited_chars: int, justification: str) -> list[str]:
    """Which of :data:`BORDERLINE_SIGNS` a claim shows (module docstring)."""
    signs = []
    # The markers' digits name passages: a claim ending in "[3]" states no number.
    if _NUMBER.search(strip_markers(claim or "")):
        signs.append("number")
    if cited_chars >= LONG_CITED_CHARS:
        signs.append("long cited text")
    if _PARTIAL.search(justification or ""):
        signs.append("partial support")
    return signs


def kappa_interval(confusion: np.ndarray) -> tuple[float | None, float | None, tuple[float, float] | None]:
    """Cohen's kappa (exact), its large-sample SE and 95 % interval from a
    q × q int confusion matrix (module docstring); ``(None, None, None)`` when
    kappa is undefined."""
    from statsmodels.stats.inter_rater import cohens_kappa

    cells = np.asarray(confusion, dtype="int64")
    n = int(cells.sum())
    chance = int((cells.sum(axis=1) * cells.sum(axis=0)).sum())
    if n == 0 or n * n == chance:
        return None, None, None
    kappa = float(Fraction(n * int(np.trace(cells)) - chance, n * n - chance))
    with warnings.catch_warnings():
        # statsmodels also tests kappa = 0 (z = kappa / SE0), which divides by 0 on a degenerate
        # table; only SE is used here.
        warnings.simplefilter("ignore", RuntimeWarning)
        variance = float(cohens_kappa(cells, return_results=True).var_kappa)
    # A reviewer who gives one label throughout has kappa 0 on every resample: the variance
    # is exactly 0 there, and rounding may leave it a hair below.
    se = math.sqrt(max(variance, 0.0)) if not math.isnan(variance) else 0.0
    low, high = max(-1.0, kappa - Z_95 * se), min(1.0, kappa + Z_95 * se)
    return kappa, se, (low, high)


def grade_judge(reference: pd.DataFrame, judge: pd.DataFrame, *,
                claims: pd.DataFrame | Callable[[list[int]], pd.DataFrame] | None = None,
                judge_name: str = "judge", reference_name: str = "reference") -> JudgeGrade:
    """Grade ``judge`` against ``reference`` (frames as in the module docstring;
    ``claims`` a frame or a function of the disagreeing claim ids).

    Raises ``ValueError`` when a frame lacks ``claim_id``/``label``, lists a
    claim twice, or holds a label other than SUPPORTED/UNSUPPORTED.
    """
    ref = _checked(reference, "reference", "justification")
    jud = _checked(judge, "judge", "reason")
    both = ref.merge(jud, on="claim_id", suffixes=("_reference", "_judge"))
    n = len(both)
    q = len(CATEGORIES)
    codes = (pd.Categorical(both["label_reference"], categories=CATEGORIES).codes.astype("int64") * q
             + pd.Categorical(both["label_judge"], categories=CATEGORIES).codes.astype("int64"))
    cells = np.bincount(codes, minlength=q * q).reshape(q, q)
    confusion = pd.DataFrame(cells, index=pd.Index(CATEGORIES, name=reference_name),
                             columns=pd.Index(CATEGORIES, name=judge_name))
    kappa, se, interval = kappa_interval(cells)
    s, u = 0, 1
    both_unsupported = int(cells[u, u])
    precision = Ratio(both_unsupported, int(cells[:, u].sum()))
    recall = Ratio(both_unsupported, int(cells[u, :].sum()))
    return JudgeGrade(
        judge=judge_name, reference=reference_name, n=n,
        reference_only=int((~ref["claim_id"].isin(jud["claim_id"])).sum()),
        agreement=Ratio(int(np.trace(cells)), n), kappa=kappa, kappa_se=se, kappa_ci95=interval,
        precision=precision, recall=recall, f1=_f1(precision, recall), missed_unsupported=int(cells[u, s]),
        confusion=confusion, disagreements=_disagreements(both, claims),
    )


def _f1(precision: Ratio, recall: Ratio) -> float | None:
    if precision.value is None or recall.value is None:
        return None
    if precision.value + recall.value == 0:
        return 0.0
    return float(2 * precision.fraction * recall.fraction / (precision.fraction + recall.fraction))


def _checked(frame: pd.DataFrame, name: str, text_column: str) -> pd.DataFrame:
    missing = [column for column in ("claim_id", "label") if column not in frame.columns]
    if missing:
        raise ValueError(f"{name} labels lack column(s) {', '.join(missing)}")
    if frame["claim_id"].duplicated().any():
        raise ValueError(f"{name} labels list claim {frame.loc[frame['claim_id'].duplicated(), 'claim_id'].iloc[0]} "
                         "twice")
    outside = sorted(set(frame["label"].unique().tolist()) - set(CATEGORIES), key=str)
    if outside:
        raise ValueError(f"{name} label(s) {', '.join(map(str, outside))} are not SUPPORTED or UNSUPPORTED")
    out = frame[["claim_id", "label"]].copy()
    # Object columns: pandas 3 would make "" or astype(str) an Arrow string column, which the merges
    # and the rows of the disagreements then walk value by value (70 ms at 40k claims).
    out[text_column] = (frame[text_column].fillna("").astype(str).to_numpy(dtype=object)
                        if text_column in frame.columns else np.full(len(out), "", dtype=object))
    return out


def _disagreements(both: pd.DataFrame,
                   claims: pd.DataFrame | Callable[[list[int]], pd.DataFrame] | None) -> pd.DataFrame:
    differ = both[both["label_reference"] != both["label_judge"]]
    if callable(claims):
        claims = claims([int(c) for c in differ["claim_id"].tolist()])
    if claims is not None and len(claims):
        words = [column for column in ("reason", "justification") if column in claims.columns]
        differ = differ.drop(columns=words).merge(claims[["claim_id", "claim", "cited_chars", *words]],
                                                  on="claim_id", how="left")
    else:
        differ = differ.assign(claim="", cited_chars=0)
    differ = differ.fillna({"claim": "", "cited_chars": 0, "reason": "", "justification": ""})
    rows = pd.DataFrame({
        "claim_id": differ["claim_id"].to_numpy(),
        "reference": differ["label_reference"].to_numpy(dtype=object),
        "judge": differ["label_judge"].to_numpy(dtype=object),
        "claim": differ["claim"].to_numpy(dtype=object),
        "reason": differ["reason"].to_numpy(dtype=object),
        "justification": differ["justification"].to_numpy(dtype=object),
        "borderline": [borderline_signs(claim, int(chars), justification) for claim, chars, justification
                       in zip(differ["claim"], differ["cited_chars"], differ["justification"], strict=True)],
    })
    if rows.empty:
        return rows
    rows["signs"] = rows["borderline"].map(len)
    return (rows.sort_values(["signs", "claim_id"], ascending=[False, True], kind="stable")
            .drop(columns="signs").reset_index(drop=True))
