"""Agreement between reviewers, human or model (SPEC §4.4).

"Do not automate before you can grade the automation" (seed "Measure Citation
Coverage and Support"): an automated labeler is imported as a reviewer of kind
``model`` and graded here against a human (or adjudicated) reviewer.

Every function takes the labels frame of :mod:`scoring.labels` (``claim_id,
reviewer, label``, one current label per reviewer and claim).

Figures and where they come from:

- per pair of reviewers: raw agreement, Cohen's kappa (exact, from the integer
  confusion matrix), specific agreement per label, confusion matrix;
- across all reviewers: Krippendorff's alpha (nominal; the ``krippendorff``
  package), Gwet's AC1 (Gwet 2008, with missing labels as in Gwet's
  *Handbook of Inter-Rater Reliability*, 2014, and his irrCAC package; no
  maintained Python package computes it: irrCAC pins scipy 1.12) and Fleiss'
  kappa (Fleiss 1971, the figure many papers print; with missing labels as in
  the same handbook and irrCAC's ``fleiss.kappa.raw``, so it equals
  ``statsmodels.stats.inter_rater.fleiss_kappa`` whenever every claim has the
  same number of labels, the case statsmodels takes).

Confidence intervals (``*_ci95``) are 95 % percentile bootstrap intervals over
claims: :data:`BOOTSTRAP_RESAMPLES` resamples of the claims with replacement,
drawn from a generator seeded with :data:`BOOTSTRAP_SEED`, so repeated runs
give the same numbers. Every figure here depends on the claims only through
how many claims show each label pattern (a pair's confusion cell; a claim's
count of each label), so a resample of n claims is drawn as multinomial counts
of those patterns — the same distribution as picking n claims one by one, in
time independent of n. Resamples where a figure is undefined are left out; the
interval is ``None`` when the figure itself is undefined.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from itertools import combinations
from typing import Any

from scoring.labels import LABEL_VALUES, check_labels_frame, sort_by
from scoring.lazy import np, pd  # loaded on first use: keeps start-up fast (SPEC §7)
from scoring.ratio import Ratio

BOOTSTRAP_RESAMPLES = 2_000
BOOTSTRAP_SEED = 20_261_201

Interval = tuple[float, float]


@dataclass(frozen=True)
class Coefficient:
    """One agreement figure: ``value`` (``None`` when undefined), ``n`` (the
    claims it rests on) and ``ci95`` (``(low, high)`` bootstrap interval, or
    ``None``)."""

    value: float | None
    n: int
    ci95: Interval | None

    def to_dict(self) -> dict[str, Any]:
        return {"value": self.value, "n": self.n, "ci95": _interval_list(self.ci95)}


@dataclass(frozen=True)
class Agreement:
    """Two reviewers on the claims both labeled (SPEC §4.4).

    ``n``: claims both labeled. ``agreement``: raw agreement, same label /
    ``n`` as a :class:`~scoring.ratio.Ratio` (value ``None`` when n = 0).
    ``kappa``: Cohen's kappa in [-1, 1], ``None`` when undefined (n = 0, or
    expected agreement 1: both reviewers gave one and the same label to every
    claim); ``kappa_ci95`` its bootstrap interval (module docstring).
    ``per_label``: specific agreement per label k, 2·n_kk / (a_k + b_k) (the
    share of the pair's k labels that the other reviewer matched; Uebersax
    1982), a Ratio per label of ``categories``. ``confusion``: int
    DataFrame, rows = ``reviewer_a``'s label, columns = ``reviewer_b``'s, both
    in the order of ``categories`` (SUPPORTED, UNSUPPORTED, UNCITED by
    default). ``disagreements``: ``claim_id, a, b`` (a's and b's label) for
    every claim where they differ, sorted by ``claim_id``.
    """

    reviewer_a: str
    reviewer_b: str
    n: int
    agreement: Ratio
    kappa: float | None
    kappa_ci95: Interval | None
    per_label: dict[str, Ratio]
    confusion: pd.DataFrame = field(repr=False, compare=False)
    disagreements: pd.DataFrame = field(repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: ``reviewer_a, reviewer_b, n, agreement`` (float or None),
        ``kappa``, ``kappa_ci95`` (``[low, high]`` or None), ``per_label``
        ({label: float or None}), ``confusion`` ({a's label: {b's label:
        count}}) and ``disagreements`` (list of ``{"claim_id", "a", "b"}``)."""
        return {
            "reviewer_a": self.reviewer_a,
            "reviewer_b": self.reviewer_b,
            "n": self.n,
            "agreement": self.agreement.value,
            "kappa": self.kappa,
            "kappa_ci95": _interval_list(self.kappa_ci95),
            "per_label": {label: ratio.value for label, ratio in self.per_label.items()},
            "confusion": {
                row: {col: int(count) for col, count in counts.items()}
                for row, counts in self.confusion.to_dict("index").items()
            },
            "disagreements": [
                {"claim_id": _native(c), "a": a, "b": b} for c, a, b in self.disagreements.itertuples(index=False)
            ],
        }


@dataclass(frozen=True)
class Reliability:
    """Agreement across all reviewers (SPEC §4.4).

    ``reviewers``: the names counted, sorted. ``claims``: claims labeled by at
    least one of them. ``alpha``: Krippendorff's alpha (nominal) resting on the
    claims labeled by ≥ 2 reviewers. ``ac1``: Gwet's AC1, its observed
    agreement on the claims labeled by ≥ 2 reviewers (its ``n``), its label
    prevalence on every labeled claim. ``fleiss_kappa``: Fleiss' kappa, the
    same observed agreement and prevalence with chance agreement Σ π_k²
    (:func:`fleiss_kappa`). ``per_label``: specific agreement per
    label k over all reviewer pairs on a claim, Σ r_k(r_k − 1) / Σ r_k(r − 1)
    (pairs of labels on one claim that are both k, among pairs with at least one
    k), a Ratio per label of the categories.
    """

    reviewers: list[str]
    claims: int
    alpha: Coefficient
    ac1: Coefficient
    per_label: dict[str, Ratio]
    fleiss_kappa: Coefficient = Coefficient(None, 0, None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "reviewers": self.reviewers,
            "claims": self.claims,
            "krippendorff_alpha": self.alpha.to_dict(),
            "gwet_ac1": self.ac1.to_dict(),
            "fleiss_kappa": self.fleiss_kappa.to_dict(),
            "per_label": {label: ratio.value for label, ratio in self.per_label.items()},
        }


def pairwise_agreement(labels: pd.DataFrame, reviewer_a: str, reviewer_b: str, *,
                       categories: Sequence[str] = LABEL_VALUES) -> Agreement:
    """Raw agreement, Cohen's kappa with its bootstrap interval, specific
    agreement per label, confusion matrix and disagreements of two reviewers
    on the claims both labeled (SPEC §4.4).

    Kappa = (p_o − p_e) / (1 − p_e) with p_o the raw agreement and p_e =
    Σ_k (a's count of k · b's count of k) / n², evaluated on the integer counts
    of the confusion matrix, so perfect agreement is exactly 1.0. A reviewer
    without labels just gives n = 0. ``categories``: the labels a reviewer
    could give (rows and columns of the confusion matrix).

    Raises ``ValueError`` on an invalid labels frame (see
    :func:`scoring.labels.check_labels_frame`), on a label outside
    ``categories``, or when ``reviewer_a`` and ``reviewer_b`` are the same
    reviewer.
    """
    if reviewer_a == reviewer_b:
        raise ValueError(f"agreement needs two different reviewers, got {reviewer_a!r} twice")
    _check(labels, categories)
    return _pair(labels, reviewer_a, reviewer_b, categories)


def all_pairs(labels: pd.DataFrame, *, categories: Sequence[str] = LABEL_VALUES) -> list[Agreement]:
    """:func:`pairwise_agreement` for every pair of reviewers in ``labels``,
    reviewers sorted by name (a before b), pairs sharing no claim included
    (n = 0, nulls). Raises ``ValueError`` as :func:`pairwise_agreement`."""
    _check(labels, categories)
    reviewers = sorted(labels["reviewer"].unique().tolist())
    by_reviewer = dict(tuple(labels.groupby("reviewer", sort=False)))
    return [_pair(pd.concat([by_reviewer[a], by_reviewer[b]]), a, b, categories)
            for a, b in combinations(reviewers, 2)]


def _pair(labels: pd.DataFrame, reviewer_a: str, reviewer_b: str, categories: Sequence[str]) -> Agreement:
    """:func:`pairwise_agreement` on a checked labels frame."""

    def labels_of(reviewer: str) -> pd.Series:
        rows = labels[labels["reviewer"] == reviewer]
        return pd.Series(rows["label"].to_numpy(dtype=object), index=rows["claim_id"])

    both = pd.concat({"a": labels_of(reviewer_a), "b": labels_of(reviewer_b)}, axis=1)
    both = both.dropna().rename_axis("claim_id").reset_index()
    q = len(categories)
    codes = _codes(both["a"], categories) * q + _codes(both["b"], categories)
    confusion = pd.DataFrame(np.bincount(codes, minlength=q * q).reshape(q, q).astype("int64"),
                             index=pd.Index(list(categories), name=reviewer_a),
                             columns=pd.Index(list(categories), name=reviewer_b))

    cells = confusion.to_numpy()
    n = len(both)
    kappa = _kappa(cells[np.newaxis])[0]
    rows, cols = cells.sum(axis=1), cells.sum(axis=0)
    per_label = {label: Ratio(2 * int(cells[k, k]), int(rows[k] + cols[k])) for k, label in enumerate(categories)}
    differ = sort_by(both[both["a"] != both["b"]], ["claim_id"])
    return Agreement(
        reviewer_a=reviewer_a,
        reviewer_b=reviewer_b,
        n=n,
        agreement=Ratio(int(np.trace(cells)), n),
        kappa=None if np.isnan(kappa) else float(kappa),
        kappa_ci95=None if np.isnan(kappa) else _bootstrap(cells.ravel(), lambda draws: _kappa(
            draws.reshape(-1, *cells.shape))),
        per_label=per_label,
        confusion=confusion,
        disagreements=differ[["claim_id", "a", "b"]],
    )


def krippendorff_alpha(labels: pd.DataFrame, *, reviewers: Iterable[str] | None = None,
                       categories: Sequence[str] = LABEL_VALUES) -> float | None:
    """Krippendorff's alpha, nominal, across all reviewers (SPEC §4.4).

    In: a labels frame; with ``reviewers`` only those reviewers' labels count.
    Claims labeled by a single reviewer carry no pairable value and drop out
    (as in Krippendorff's definition). Computed by the ``krippendorff``
    package from per-claim value counts.

    Out: alpha ≤ 1 (1.0 exactly for perfect agreement), or ``None`` when
    undefined: no claim labeled by ≥ 2 reviewers, or every pairable label is
    the same value (expected disagreement 0).

    Raises ``ValueError`` as :func:`scoring.labels.check_labels_frame`, or on
    a label outside ``categories``.
    """
    return _alpha_value(_value_counts(labels, reviewers=reviewers, categories=categories))


def gwet_ac1(labels: pd.DataFrame, *, reviewers: Iterable[str] | None = None,
             categories: Sequence[str] = LABEL_VALUES) -> float | None:
    """Gwet's AC1 across all reviewers (SPEC §4.4; Gwet 2008, missing labels
    as in Gwet 2014 §2.5 and his irrCAC package).

    With r_ik the reviewers giving claim i label k and r_i = Σ_k r_ik:

    - p_a = mean over the n' claims with r_i ≥ 2 of Σ_k r_ik(r_ik − 1) / (r_i(r_i − 1));
    - π_k = mean over every labeled claim of r_ik / r_i;
    - p_e = Σ_k π_k(1 − π_k) / (q − 1), q = ``len(categories)``, the labels a
      reviewer could give;
    - AC1 = (p_a − p_e) / (1 − p_e).

    Unlike kappa and alpha, p_e stays small when one label dominates, so AC1
    does not collapse on runs where nearly every claim is SUPPORTED.

    Out: AC1 ≤ 1 (1.0 when every claim's reviewers agree), ``None`` when no
    claim is labeled by ≥ 2 reviewers. Raises ``ValueError`` as
    :func:`krippendorff_alpha`, or when fewer than two categories are given.
    """
    if len(categories) < 2:
        raise ValueError(f"AC1 needs at least two categories, got {list(categories)}")
    return gwet_ac1_counts(_value_counts(labels, reviewers=reviewers, categories=categories))


def gwet_ac1_counts(value_counts: np.ndarray) -> float | None:
    """Gwet's AC1 (:func:`gwet_ac1`) from a claims × categories int matrix:
    cell (i, k) = reviewers who gave claim i category k; q = its number of
    columns (≥ 2). ``None`` when no row sums to ≥ 2."""
    counts = np.asarray(value_counts, dtype="int64")
    if counts.ndim != 2 or counts.shape[1] < 2:
        raise ValueError(f"value counts must be claims × ≥ 2 categories, got shape {counts.shape}")
    counts = counts[counts.sum(axis=1) > 0]
    value = _ac1(counts, np.ones((1, len(counts))))[0] if len(counts) else np.nan
    return None if np.isnan(value) else float(value)


def fleiss_kappa(labels: pd.DataFrame, *, reviewers: Iterable[str] | None = None,
                 categories: Sequence[str] = LABEL_VALUES) -> float | None:
    """Fleiss' kappa across all reviewers (SPEC §4.4; Fleiss 1971, missing labels as
    in Gwet 2014 and irrCAC's ``fleiss.kappa.raw``).

    p_a and π_k as in :func:`gwet_ac1`; p_e = Σ_k π_k²; kappa = (p_a − p_e) / (1 − p_e).
    With the same number of labels on every claim this is Fleiss' own formula
    (``statsmodels.stats.inter_rater.fleiss_kappa``).

    Out: kappa ≤ 1, ``None`` when no claim is labeled by ≥ 2 reviewers or chance
    agreement is 1 (every label the same). Raises ``ValueError`` as
    :func:`krippendorff_alpha`.
    """
    return fleiss_kappa_counts(_value_counts(labels, reviewers=reviewers, categories=categories))


def fleiss_kappa_counts(value_counts: np.ndarray) -> float | None:
    """Fleiss' kappa (:func:`fleiss_kappa`) from a claims × categories int matrix
    (cell (i, k) = reviewers who gave claim i category k)."""
    counts = np.asarray(value_counts, dtype="int64")
    if counts.ndim != 2:
        raise ValueError(f"value counts must be claims × categories, got shape {counts.shape}")
    counts = counts[counts.sum(axis=1) > 0]
    value = _fleiss(counts, np.ones((1, len(counts))))[0] if len(counts) else np.nan
    return None if np.isnan(value) else float(value)


def reliability(labels: pd.DataFrame, *, reviewers: Iterable[str] | None = None,
                categories: Sequence[str] = LABEL_VALUES) -> Reliability:
    """Krippendorff's alpha, Gwet's AC1 and Fleiss' kappa across all reviewers,
    each with its n and 95 % bootstrap interval over claims (module docstring),
    and specific agreement per label (:class:`Reliability`).

    The intervals come from the same resamples of the labeled claims: a claim
    with one label can only move AC1's and kappa's label prevalence. Raises
    ``ValueError`` as :func:`gwet_ac1`.
    """
    if len(categories) < 2:
        raise ValueError(f"AC1 needs at least two categories, got {list(categories)}")
    if reviewers is not None:
        labels = labels[labels["reviewer"].isin(list(reviewers))]
    counts = _value_counts(labels, reviewers=None, categories=categories)
    patterns, weights = np.unique(counts, axis=0, return_counts=True) if len(counts) else (counts, np.zeros(0, int))
    pairable = int(weights[patterns.sum(axis=1) >= 2].sum()) if len(counts) else 0
    alpha = _alpha_value(counts)
    ac1 = _ac1(patterns, weights[np.newaxis])[0] if len(counts) else np.nan
    kappa = _fleiss(patterns, weights[np.newaxis])[0] if len(counts) else np.nan
    alpha_ci = ac1_ci = kappa_ci = None
    if alpha is not None or not np.isnan(ac1):
        draws = _draws(weights)
        if alpha is not None:
            alpha_ci = _percentile(_alpha(patterns, draws))
        if not np.isnan(ac1):
            ac1_ci = _percentile(_ac1(patterns, draws))
        if not np.isnan(kappa):
            kappa_ci = _percentile(_fleiss(patterns, draws))
    rated = patterns.sum(axis=1, keepdims=True)
    pair_weights = weights[:, np.newaxis] * (rated >= 2)
    same = (pair_weights * patterns * (patterns - 1)).sum(axis=0)
    involving = (pair_weights * patterns * (rated - 1)).sum(axis=0)
    return Reliability(
        reviewers=sorted(labels["reviewer"].unique().tolist()),
        claims=len(counts),
        alpha=Coefficient(alpha, pairable, alpha_ci),
        ac1=Coefficient(None if np.isnan(ac1) else float(ac1), pairable, ac1_ci),
        per_label={label: Ratio(int(same[k]), int(involving[k])) for k, label in enumerate(categories)},
        fleiss_kappa=Coefficient(None if np.isnan(kappa) else float(kappa), pairable, kappa_ci),
    )


def _check(labels: pd.DataFrame, categories: Sequence[str]) -> None:
    check_labels_frame(labels)
    outside = sorted(set(labels["label"].unique()) - set(categories))
    if outside:
        raise ValueError(f"label(s) {', '.join(outside)} outside the categories compared ({', '.join(categories)})")


def _value_counts(labels: pd.DataFrame, *, reviewers: Iterable[str] | None,
                  categories: Sequence[str]) -> np.ndarray:
    """Claims × categories int matrix: how many reviewers gave each claim each label."""
    _check(labels, categories)
    if reviewers is not None:
        labels = labels[labels["reviewer"].isin(list(reviewers))]
    # np.bincount on factorized ids: pd.crosstab takes ~1 s on 120k labels
    claims, _ = pd.factorize(labels["claim_id"])
    q = len(categories)
    flat = np.bincount(claims * q + _codes(labels["label"], categories), minlength=(claims.max(initial=-1) + 1) * q)
    return flat.reshape(-1, q).astype("int64")


def _codes(values: pd.Series, categories: Sequence[str]) -> np.ndarray:
    """Position of each label in ``categories`` (checked by :func:`_check` first)."""
    return pd.Categorical(values, categories=list(categories)).codes.astype("int64")


def _alpha_value(counts: np.ndarray) -> float | None:
    pairable = counts[counts.sum(axis=1) >= 2]
    if len(pairable) == 0 or np.count_nonzero(pairable.sum(axis=0)) < 2:
        return None
    import krippendorff  # imports numpy's test helpers: loaded only when alpha is asked for

    return float(krippendorff.alpha(value_counts=pairable, level_of_measurement="nominal"))


def _kappa(cells: np.ndarray) -> np.ndarray:
    """Cohen's kappa of each q×q confusion matrix in ``cells`` (shape B×q×q), NaN where undefined."""
    n = cells.sum(axis=(1, 2)).astype("float64")
    agreed = np.trace(cells, axis1=1, axis2=2)
    chance = (cells.sum(axis=2) * cells.sum(axis=1)).sum(axis=1).astype("float64")
    denominator = n * n - chance
    with np.errstate(divide="ignore", invalid="ignore"):
        values = np.where(denominator > 0, (n * agreed - chance) / denominator, np.nan)
    if len(cells) == 1 and denominator[0] > 0:
        # the reported figure: exact on the integer counts, so perfect agreement is exactly 1.0
        values[0] = float(Fraction(int(n[0]) * int(agreed[0]) - int(chance[0]), int(denominator[0])))
    return values


def _alpha(patterns: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Nominal alpha for each row of ``weights`` (B × patterns: how many claims
    show each label-count pattern), NaN where undefined. Krippendorff's
    coincidence form: alpha = 1 − (n − 1) Σ_{c≠k} o_ck / Σ_{c≠k} n_c n_k."""
    rated = patterns.sum(axis=1)
    keep = rated >= 2
    patterns, rated, weights = patterns[keep], rated[keep], weights[:, keep]
    # per pattern: Σ_{c≠k} o_ck = (m² − Σ_c n_c²) / (m − 1), and n_c = Σ_k o_ck = its count of c
    disagreeing = (rated**2 - (patterns**2).sum(axis=1)) / np.maximum(rated - 1, 1)
    observed = weights @ disagreeing
    values = weights @ patterns
    total = values.sum(axis=1)
    expected = total**2 - (values**2).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(expected > 0, 1 - (total - 1) * observed / expected, np.nan)


def _ac1(patterns: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Gwet's AC1 (see :func:`gwet_ac1`) for each row of ``weights`` (B ×
    patterns, or claims with weight 1), NaN where no claim has ≥ 2 labels."""
    q = patterns.shape[1]
    rated = patterns.sum(axis=1).astype("float64")
    pairable = rated >= 2
    with np.errstate(divide="ignore", invalid="ignore"):
        agreeing = np.where(pairable, (patterns * (patterns - 1)).sum(axis=1) / (rated * (rated - 1)), 0.0)
        shares = np.where(rated[:, np.newaxis] > 0, patterns / rated[:, np.newaxis], 0.0)
        p_a = (weights @ agreeing) / (weights @ pairable)
        prevalence = (weights @ shares) / weights.sum(axis=1, keepdims=True)
        p_e = (prevalence * (1 - prevalence)).sum(axis=1) / (q - 1)
        return (p_a - p_e) / (1 - p_e)


def _fleiss(patterns: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Fleiss' kappa (see :func:`fleiss_kappa`) for each row of ``weights`` (B ×
    patterns, or claims with weight 1): AC1's p_a and prevalence, chance Σ π_k².
    NaN where no claim has ≥ 2 labels or chance agreement is 1."""
    rated = patterns.sum(axis=1).astype("float64")
    pairable = rated >= 2
    with np.errstate(divide="ignore", invalid="ignore"):
        agreeing = np.where(pairable, (patterns * (patterns - 1)).sum(axis=1) / (rated * (rated - 1)), 0.0)
        shares = np.where(rated[:, np.newaxis] > 0, patterns / rated[:, np.newaxis], 0.0)
        p_a = (weights @ agreeing) / (weights @ pairable)
        prevalence = (weights @ shares) / weights.sum(axis=1, keepdims=True)
        p_e = (prevalence**2).sum(axis=1)
        return np.where(p_e < 1, (p_a - p_e) / (1 - p_e), np.nan)


def _draws(weights: np.ndarray) -> np.ndarray:
    """BOOTSTRAP_RESAMPLES multinomial resamples of the claims' pattern counts (module docstring)."""
    n = int(weights.sum())
    generator = np.random.default_rng(BOOTSTRAP_SEED)
    return generator.multinomial(n, weights / n, size=BOOTSTRAP_RESAMPLES)


def _bootstrap(weights: np.ndarray, statistic) -> Interval | None:
    if weights.sum() == 0:
        return None
    return _percentile(statistic(_draws(weights)))


def _percentile(values: np.ndarray) -> Interval | None:
    values = values[~np.isnan(values)]
    if len(values) == 0:
        return None
    low, high = np.percentile(values, [2.5, 97.5])
    return float(low), float(high)


def _interval_list(interval: Interval | None) -> list[float] | None:
    return None if interval is None else [interval[0], interval[1]]


def _native(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value
