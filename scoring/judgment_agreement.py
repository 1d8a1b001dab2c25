"""Agreement of reviewers on citation judgments (SPEC §4.3b, §4.4, §6).

Each citation judged by two or more reviewers is one unit; its values are
the reviewers' judgments, ordered FULL > PARTIAL > NONE. UNJUDGEABLE says
the passage could not be judged, not how far it carries the claim: it is
left out (a citation left with fewer than two judgments drops out, as in
Krippendorff's definition).

Figures: Krippendorff's alpha, **nominal** (any two different judgments
disagree equally) and **ordinal** (FULL vs NONE disagrees more than FULL vs
PARTIAL; Krippendorff 2004, §11.3.4: δ²_ck = (Σ_{g=c..k} n_g − (n_c +
n_k)/2)² over the judgments' marginal counts n_g). The point values come
from the ``krippendorff`` package; the 95 % intervals are percentile
bootstrap intervals over citations, with the resampling of
:mod:`scoring.agreement` (:data:`~scoring.agreement.BOOTSTRAP_RESAMPLES`
multinomial resamples of the citations' judgment-count patterns, seed
:data:`~scoring.agreement.BOOTSTRAP_SEED`), the alpha of each resample from
Krippendorff's coincidence form (tests check it equals the package's).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from scoring.agreement import BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED, Coefficient, Interval
from scoring.judgments import FULL, JUDGMENTS, NONE, PARTIAL, UNJUDGEABLE
from scoring.lazy import np, pd  # loaded on first use: keeps start-up fast (SPEC §7)

# Ordered low to high: the ordinal metric's order (FULL > PARTIAL > NONE).
ORDERED = (NONE, PARTIAL, FULL)


@dataclass(frozen=True)
class JudgmentAgreement:
    """Alpha of the reviewers' citation judgments (module docstring).

    ``reviewers``: names counted, sorted. ``citations``: citations with at
    least one judgment other than UNJUDGEABLE. ``nominal``/``ordinal``:
    :class:`~scoring.agreement.Coefficient` (value ``None`` when undefined:
    no citation with two judgments, or all of them the same value; ``n`` =
    citations with ≥ 2 judgments; ``ci95``). ``unjudgeable``: UNJUDGEABLE
    judgments left out.
    """

    reviewers: list[str]
    citations: int
    nominal: Coefficient
    ordinal: Coefficient
    unjudgeable: int

    def to_dict(self) -> dict[str, Any]:
        """The ``citation_judgments`` object of ``agreement --format json``:
        ``alpha_nominal``, ``alpha_nominal_ci95``, ``alpha_ordinal``,
        ``alpha_ordinal_ci95`` (``[low, high]`` or None), ``n_citations``
        (citations with ≥ 2 judgments), ``citations_judged``,
        ``unjudgeable_left_out``, ``reviewers``."""
        return {
            "alpha_nominal": self.nominal.value, "alpha_nominal_ci95": _listed(self.nominal.ci95),
            "alpha_ordinal": self.ordinal.value, "alpha_ordinal_ci95": _listed(self.ordinal.ci95),
            "n_citations": self.nominal.n, "citations_judged": self.citations,
            "unjudgeable_left_out": self.unjudgeable, "reviewers": self.reviewers,
        }


def judgment_value_counts(judgments: pd.DataFrame) -> np.ndarray:
    """Citations × (NONE, PARTIAL, FULL) int matrix: how many reviewers gave
    each citation each judgment, UNJUDGEABLE left out. In: ``citation_id,
    reviewer, judgment`` (one current judgment per reviewer and citation).
    Raises ValueError for an unknown judgment or a reviewer judging one
    citation twice."""
    _check(judgments)
    kept = judgments[judgments["judgment"] != UNJUDGEABLE]
    citations, _ = pd.factorize(kept["citation_id"])
    codes = pd.Categorical(kept["judgment"], categories=list(ORDERED)).codes.astype("int64")
    flat = np.bincount(citations * 3 + codes, minlength=(citations.max(initial=-1) + 1) * 3)
    return flat.reshape(-1, 3).astype("int64")


def judgment_agreement(judgments: pd.DataFrame) -> JudgmentAgreement:
    """Nominal and ordinal alpha of ``judgments`` (``citation_id, reviewer,
    judgment``) with their n and 95 % bootstrap intervals (module docstring).
    Raises ValueError as :func:`judgment_value_counts`."""
    counts = judgment_value_counts(judgments)
    pairable = counts[counts.sum(axis=1) >= 2]
    nominal, ordinal = _package_alpha(pairable, "nominal"), _package_alpha(pairable, "ordinal")
    nominal_ci = ordinal_ci = None
    if len(pairable) and (nominal is not None or ordinal is not None):
        patterns, weights = np.unique(pairable, axis=0, return_counts=True)
        draws = np.random.default_rng(BOOTSTRAP_SEED).multinomial(
            int(weights.sum()), weights / weights.sum(), size=BOOTSTRAP_RESAMPLES)
        if nominal is not None:
            nominal_ci = _percentile(coincidence_alpha(patterns, draws, level="nominal"))
        if ordinal is not None:
            ordinal_ci = _percentile(coincidence_alpha(patterns, draws, level="ordinal"))
    n = len(pairable)
    return JudgmentAgreement(
        reviewers=sorted(judgments["reviewer"].unique().tolist()),
        citations=len(counts),
        nominal=Coefficient(nominal, n, nominal_ci),
        ordinal=Coefficient(ordinal, n, ordinal_ci),
        unjudgeable=int((judgments["judgment"] == UNJUDGEABLE).sum()),
    )


def coincidence_alpha(patterns: np.ndarray, weights: np.ndarray, *, level: str) -> np.ndarray:
    """Alpha for each row of ``weights`` (B × patterns: how many citations show
    each (NONE, PARTIAL, FULL) count pattern), NaN where undefined.

    Coincidences of a unit with m values: o_ck = (n_c n_k − [c = k] n_c) /
    (m − 1); alpha = 1 − (n − 1) Σ o_ck δ²_ck / Σ n_c n_k δ²_ck over the
    summed coincidences, n_c their marginals, n = Σ n_c. ``level``:
    ``nominal`` (δ² = 1 when c ≠ k) or ``ordinal`` (module docstring).
    """
    patterns = np.asarray(patterns, dtype="float64")
    rated = patterns.sum(axis=1)
    keep = rated >= 2
    patterns, rated, weights = patterns[keep], rated[keep], np.asarray(weights, dtype="float64")[:, keep]
    q = patterns.shape[1]
    per_unit = (patterns[:, :, None] * patterns[:, None, :] - np.eye(q)[None] * patterns[:, :, None])
    per_unit /= (rated - 1)[:, None, None]
    observed = np.einsum("bp,pck->bck", weights, per_unit)
    marginals = observed.sum(axis=2)
    total = marginals.sum(axis=1)
    delta = _delta(marginals, level)
    expected_pairs = marginals[:, :, None] * marginals[:, None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        disagreement = (observed * delta).sum(axis=(1, 2))
        chance = (expected_pairs * delta).sum(axis=(1, 2))
        return np.where(chance > 0, 1 - (total - 1) * disagreement / chance, np.nan)


def _delta(marginals: np.ndarray, level: str) -> np.ndarray:
    """δ²_ck for each resample (B × q × q)."""
    q = marginals.shape[1]
    if level == "nominal":
        return np.broadcast_to(1 - np.eye(q), (len(marginals), q, q))
    if level != "ordinal":
        raise ValueError(f"unknown level {level!r}: use nominal or ordinal")
    cumulative = np.concatenate([np.zeros((len(marginals), 1)), np.cumsum(marginals, axis=1)], axis=1)
    low, high = np.minimum.outer(np.arange(q), np.arange(q)), np.maximum.outer(np.arange(q), np.arange(q))
    # Σ_{g=low..high} n_g − (n_c + n_k) / 2
    span = cumulative[:, high + 1] - cumulative[:, low]
    half = (marginals[:, :, None] + marginals[:, None, :]) / 2
    return (span - half) ** 2


def _package_alpha(pairable: np.ndarray, level: str) -> float | None:
    """The ``krippendorff`` package's alpha on the pairable value counts; None when undefined."""
    if len(pairable) == 0 or np.count_nonzero(pairable.sum(axis=0)) < 2:
        return None
    import krippendorff  # imports numpy's test helpers: loaded only when alpha is asked for

    return float(krippendorff.alpha(value_counts=pairable, level_of_measurement=level))


def _check(judgments: pd.DataFrame) -> None:
    missing = {"citation_id", "reviewer", "judgment"} - set(judgments.columns)
    if missing:
        raise ValueError(f"judgments frame lacks column(s) {', '.join(sorted(missing))}")
    unknown = sorted(set(judgments["judgment"].unique()) - set(JUDGMENTS))
    if unknown:
        raise ValueError(f"unknown judgment(s) {', '.join(map(str, unknown))}: use {', '.join(JUDGMENTS)}")
    twice = judgments.duplicated(["citation_id", "reviewer"])
    if twice.any():
        row = judgments[twice].iloc[0]
        raise ValueError(f"reviewer {row['reviewer']!r} judges citation {row['citation_id']} twice")


def _percentile(values: np.ndarray) -> Interval | None:
    values = values[~np.isnan(values)]
    if len(values) == 0:
        return None
    low, high = np.percentile(values, [2.5, 97.5])
    return float(low), float(high)


def _listed(interval: Interval | None) -> list[float] | None:
    return None if interval is None else [interval[0], interval[1]]
