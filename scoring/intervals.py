"""Intervals for the figures of a run: answers are clusters (SPEC §4.5).

Every ratio Citelab prints is a sample of a system: the answers of a run are a
sample of the questions it could be asked, and the claims of one answer move
together. The functions here turn per-answer counts into an estimate with its
interval and the sample sizes behind it:

- :func:`clustered_ratio`: a pooled ratio ``R = Σyᵢ / Σxᵢ`` with the Wilson score
  interval at the effective size ``n_eff`` of the linearized (cluster-robust)
  variance — method ``"wilson-clustered"``.
- :func:`mean_interval`: a per-answer mean with the Student-t interval over the
  defined per-answer values — method ``"student-t"``.
- :func:`paired_difference`: ``R_B − R_A`` on the questions both runs answered,
  paired by question, with its normal interval — method ``"paired-clustered"``.
- :class:`Units` / :class:`AnswerValues`: one figure's per-answer counts or
  values, named by question so two runs pair up.
- :func:`contrast_interval` / :func:`paired_contrast`: sums of signed ratios
  (the gap, the change of a gap, a difference of per-answer means) with the
  same linearized variance as the paired difference.

The label budgets and the non-inferiority gate built on these intervals are in
:mod:`scoring.budgets`.

Inputs are plain sequences of integer counts, one entry per answer (or per
question); no pandas is needed. Ratios are in [0, 1], ``None`` when undefined.
The per-answer arithmetic runs on numpy arrays (issue 24: ~1 ms a figure at
10k answers instead of ~100 ms of Python loops) and gives the figures the
Python loops gave: integer sums stay integers, float sums are ``math.fsum``
where the loops used it and left to right where they used ``sum``, so a figure
differs at most in its last bits (numpy squares as ``x*x``, correctly rounded;
Python's ``x**2`` calls ``pow``, one ulp off now and then), and exact figures
stay exact (``n_eff == X`` when ``v == 0``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

from scoring.lazy import np  # loaded on first use: keeps start-up fast (SPEC §7)

DEFAULT_CONFIDENCE = 0.95
Z_95 = 1.959963984540054  # SPEC §4.5; NormalDist gives ...0536, one ulp off
WILSON_CLUSTERED = "wilson-clustered"
STUDENT_T = "student-t"
PAIRED_CLUSTERED = "paired-clustered"


def z_value(confidence: float = DEFAULT_CONFIDENCE) -> float:
    """Two-sided standard normal quantile for ``confidence`` in (0, 1).

    ``z_value(0.95) == 1.959963984540054`` (SPEC §4.5). Raises ``ValueError``
    outside (0, 1).
    """
    check_confidence(confidence)
    if confidence == DEFAULT_CONFIDENCE:
        return Z_95
    return NormalDist().inv_cdf(0.5 + confidence / 2)


def check_confidence(confidence: float) -> float:
    """``confidence`` itself when it is a level strictly between 0 and 1.

    Raises ``ValueError`` naming the value otherwise (NaN included).
    """
    if not isinstance(confidence, int | float) or not 0 < confidence < 1:
        raise ValueError(f"confidence must be a level between 0 and 1 (e.g. 0.95), not {confidence!r}")
    return float(confidence)


def interval_key(confidence: float) -> str:
    """The JSON key of an interval at ``confidence``: ``"ci95"`` at 0.95, else ``"ci"``.

    The rule (README "Intervals"): the familiar name is kept exactly when it is
    true; at any other level the key is ``ci`` and the entry carries ``level``.
    """
    return "ci95" if math.isclose(confidence, 0.95) else "ci"


@dataclass(frozen=True, slots=True)
class Interval:
    """An estimate with its interval and the sample behind it (SPEC §4.5).

    ``estimate`` is the point figure (``None`` when undefined); ``low``/``high``
    the interval at ``level`` (``None`` when it cannot be computed: a zero
    denominator, or fewer than two answers for the t and paired methods);
    ``n_answers`` the clusters that carry a unit; ``n_units`` the denominator
    units (claims, citations…); ``n_eff`` the effective number of independent
    units (``None`` where the method has none).
    """

    estimate: float | None
    low: float | None
    high: float | None
    level: float
    n_answers: int
    n_units: int
    n_eff: float | None
    method: str

    @property
    def defined(self) -> bool:
        return self.low is not None and self.high is not None

    @property
    def half_width(self) -> float | None:
        """Half the interval's width, ``None`` when there is no interval."""
        if not self.defined:
            return None
        return (self.high - self.low) / 2

    def as_dict(self) -> dict:
        """JSON form: ``{"estimate", "ci95": [lo, hi] | null, "n_answers", "n_units",
        "n_eff", "method"}``; at a level other than 0.95 the key is ``ci`` and
        ``level`` is added (:func:`interval_key`)."""
        key = interval_key(self.level)
        out = {
            "estimate": self.estimate,
            key: [self.low, self.high] if self.defined else None,
            "n_answers": self.n_answers,
            "n_units": self.n_units,
            "n_eff": self.n_eff,
            "method": self.method,
        }
        if key == "ci":
            out["level"] = self.level
        return out


def wilson(proportion: float, size: float, *, confidence: float = DEFAULT_CONFIDENCE) -> tuple[float, float]:
    """Wilson score interval of ``proportion`` observed on ``size`` units (``size`` > 0,
    not necessarily an integer: SPEC §4.5 evaluates it at ``n_eff``).

    ``(R + z²/2m ∓ z·√(R(1−R)/m + z²/4m²)) / (1 + z²/m)`` with ``m = size``;
    bounds clipped to [0, 1] against rounding. Raises ``ValueError`` when
    ``size`` ≤ 0.
    """
    if size <= 0:
        raise ValueError(f"the Wilson interval needs a positive size, not {size!r}")
    z = z_value(confidence)
    r, m = proportion, size
    centre = r + z * z / (2 * m)
    spread = z * math.sqrt(max(r * (1 - r) / m + z * z / (4 * m * m), 0.0))
    denominator = 1 + z * z / m
    return max(0.0, (centre - spread) / denominator), min(1.0, (centre + spread) / denominator)


def _int_array(values: Sequence[Any]) -> np.ndarray:
    """``values`` as an int64 array, each read as ``int(v)`` would read it (floats
    truncated; ``ValueError``/``TypeError`` where ``int`` raises)."""
    array = np.asarray(values)
    if array.dtype.kind in "iub":
        return array.astype(np.int64, copy=False)
    if array.dtype.kind == "f" and np.isfinite(array).all():
        return array.astype(np.int64)
    return np.fromiter((int(v) for v in values), dtype=np.int64, count=len(values))  # int()'s own errors


def _first_bad_pair(y: np.ndarray, x: np.ndarray) -> int | None:
    """Index of the first pair breaking ``0 ≤ y ≤ x`` (NaN passes, as in a comparison), else ``None``."""
    bad = (x < 0) | (y < 0) | (y > x)
    return int(np.argmax(bad)) if bad.any() else None


def _count_arrays(numerators: Sequence[int], denominators: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """Aligned int64 arrays of per-answer counts; ``ValueError`` on different lengths
    or on the first pair breaking ``0 ≤ numerator ≤ denominator`` (named)."""
    if len(numerators) != len(denominators):
        raise ValueError(f"{len(numerators)} numerators for {len(denominators)} denominators")
    y, x = _int_array(numerators), _int_array(denominators)
    bad = _first_bad_pair(y, x)
    if bad is not None:
        raise ValueError(f"counts must satisfy 0 ≤ numerator ≤ denominator, not {y[bad]}/{x[bad]}")
    return y, x


def _fsum(values: np.ndarray) -> float:
    """Correctly rounded sum of a float array (order-free, as ``math.fsum``)."""
    return math.fsum(values.tolist())


def _sequential_sum(values: np.ndarray) -> float:
    """Σ values added left to right, as Python's ``sum`` adds them (``np.sum`` adds
    pairwise, another rounding)."""
    return float(np.cumsum(values)[-1]) if len(values) else 0.0


def _variance_of_ratio(y: np.ndarray, x: np.ndarray) -> float | None:
    """:func:`ratio_variance` of validated arrays whose ``x`` are all > 0."""
    n = len(x)
    total_x = int(x.sum())
    if total_x == 0 or n < 2:
        return None
    r = int(y.sum()) / total_x
    return n / (n - 1) * _sequential_sum((y - r * x) ** 2) / total_x**2


def ratio_variance(numerators: Sequence[int], denominators: Sequence[int]) -> float | None:
    """Linearized (cluster-robust) variance of ``R = Σy/Σx`` (SPEC §4.5).

    ``v = n/(n−1) · Σ(yᵢ − R·xᵢ)² / X²`` over the ``n`` answers with ``xᵢ > 0``;
    ``None`` when ``X = 0`` or ``n < 2``. Equal to the cluster-robust (CR1, G/(G−1))
    variance of an intercept-only regression of the unit outcomes.
    """
    y, x = _count_arrays(numerators, denominators)
    carried = x > 0
    return _variance_of_ratio(y[carried], x[carried])


def clustered_ratio(
    numerators: Sequence[int], denominators: Sequence[int], *, confidence: float = DEFAULT_CONFIDENCE
) -> Interval:
    """Pooled ratio over answers with the cluster-robust Wilson interval (SPEC §4.5).

    ``numerators[i]``/``denominators[i]``: the units of answer i (e.g. support:
    SUPPORTED claims / labeled cited claims). ``n_eff = min(X, R(1−R)/v)`` when
    the linearized variance ``v`` > 0, else ``X`` (also when fewer than two
    answers carry a unit); the interval is Wilson's at ``m = n_eff``. With
    ``X = 0`` the estimate and the interval are ``None``. Raises
    ``ValueError`` on negative counts or a numerator above its denominator.
    """
    check_confidence(confidence)
    y, x = _count_arrays(numerators, denominators)
    carried = x > 0
    y, x = y[carried], x[carried]
    total_y, total_x = int(y.sum()), int(x.sum())
    if total_x == 0:
        return Interval(None, None, None, confidence, 0, 0, None, WILSON_CLUSTERED)
    r = total_y / total_x
    v = _variance_of_ratio(y, x)
    n_eff = float(min(total_x, r * (1 - r) / v)) if v else float(total_x)
    low, high = wilson(r, n_eff, confidence=confidence)
    return Interval(r, low, high, confidence, len(x), total_x, n_eff, WILSON_CLUSTERED)


def mean_interval(values: Sequence[float | None], *, confidence: float = DEFAULT_CONFIDENCE) -> Interval:
    """Mean of the defined per-answer values with its Student-t interval (SPEC §4.5).

    ``None`` entries (answers where the ratio is undefined) are left out. The
    interval is ``mean ± t(n−1)·s/√n`` clipped to [0, 1] (the values are
    ratios); ``None`` for n < 2. ``n_answers`` = ``n_units`` = n; ``n_eff`` is
    ``None``.
    """
    # scipy is heavy: loaded only when a mean is asked for, and only its special functions
    # (scipy.stats.t.ppf is stdtrit; scipy.stats alone takes ~0.2 s more to import).
    from scipy.special import stdtrit

    check_confidence(confidence)
    array = np.asarray(values, dtype=np.float64) if len(values) else np.zeros(0)  # None reads as NaN
    defined = array[~np.isnan(array)]
    n = len(defined)
    if n == 0:
        return Interval(None, None, None, confidence, 0, 0, None, STUDENT_T)
    mean = _fsum(defined) / n
    if n < 2:
        return Interval(mean, None, None, confidence, n, n, None, STUDENT_T)
    sd = math.sqrt(_fsum((defined - mean) ** 2) / (n - 1))
    spread = float(stdtrit(n - 1, 0.5 + confidence / 2)) * sd / math.sqrt(n)
    return Interval(mean, max(0.0, mean - spread), min(1.0, mean + spread), confidence, n, n, None, STUDENT_T)


@dataclass(frozen=True, slots=True)
class PairedDifference:
    """``b − a`` of one ratio on the questions both runs answered (SPEC §4.5).

    ``a``/``b``: the pooled ratios over those questions (``None`` when a
    denominator is 0); ``delta`` = b − a; ``low``/``high`` its interval at
    ``level`` clipped to [−1, 1] (``None`` when ``delta`` is, or fewer than two
    questions carry a unit); ``n_questions`` the questions with a unit in either run.
    """

    a: float | None
    b: float | None
    delta: float | None
    low: float | None
    high: float | None
    level: float
    n_questions: int
    method: str = PAIRED_CLUSTERED

    @property
    def defined(self) -> bool:
        return self.low is not None and self.high is not None

    @property
    def half_width(self) -> float | None:
        return None if not self.defined else (self.high - self.low) / 2

    def as_dict(self) -> dict:
        """JSON form ``{"a", "b", "delta", "ci95" | "ci" (+ "level"), "n_questions", "method"}``."""
        key = interval_key(self.level)
        out = {
            "a": self.a,
            "b": self.b,
            "delta": self.delta,
            key: [self.low, self.high] if self.defined else None,
            "n_questions": self.n_questions,
            "method": self.method,
        }
        if key == "ci":
            out["level"] = self.level
        return out


def paired_difference(
    a_numerators: Sequence[int],
    a_denominators: Sequence[int],
    b_numerators: Sequence[int],
    b_denominators: Sequence[int],
    *,
    confidence: float = DEFAULT_CONFIDENCE,
) -> PairedDifference:
    """Paired difference ``R_B − R_A`` by question (SPEC §4.5).

    The four sequences are aligned: entry q is question q, answered by both
    runs (the caller keeps only shared questions). With
    ``d_q = (y_Bq − R_B·x_Bq)/X_B − (y_Aq − R_A·x_Aq)/X_A``,
    ``Var(Δ) = n/(n−1)·Σd_q²`` over the ``n`` questions with a unit in either
    run, and the interval is ``Δ ± z·√Var(Δ)`` clipped to [−1, 1].
    """
    check_confidence(confidence)
    ya, xa = _count_arrays(a_numerators, a_denominators)
    yb, xb = _count_arrays(b_numerators, b_denominators)
    if len(xa) != len(xb):
        raise ValueError(f"{len(xa)} questions in run A for {len(xb)} in run B")
    total_xa, total_xb = int(xa.sum()), int(xb.sum())
    ra = int(ya.sum()) / total_xa if total_xa else None
    rb = int(yb.sum()) / total_xb if total_xb else None
    # The two-term contrast −R_A + R_B: paired_contrast's arithmetic, so both agree to the last bit.
    delta, variance, n = _contrast_arrays([(-1, ya, xa), (1, yb, xb)])
    if ra is None or rb is None:
        return PairedDifference(ra, rb, None, None, None, confidence, n)
    if variance is None:
        return PairedDifference(ra, rb, delta, None, None, confidence, n)
    spread = z_value(confidence) * math.sqrt(variance)
    return PairedDifference(ra, rb, delta, max(-1.0, delta - spread), min(1.0, delta + spread), confidence, n)


# --- per-answer units and contrasts ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Units:
    """Per-answer units of one pooled ratio ``R = Σyᵢ / Σxᵢ`` (SPEC §4.5).

    Entry i is one answer, named by its ``question_ids[i]`` (a run answers a
    question once, so the question pairs two runs' answers); ``numerators`` and
    ``denominators`` are its integer counts (e.g. SUPPORTED and labeled cited
    claims). ``available``: the answers of the run that could carry a unit once
    labeled (the label budget's cap); ``None`` = the answers listed.
    """

    question_ids: tuple[str, ...]
    numerators: tuple[int, ...]
    denominators: tuple[int, ...]
    available: int | None = None

    def interval(self, *, confidence: float = DEFAULT_CONFIDENCE) -> Interval:
        """:func:`clustered_ratio` of these units."""
        return clustered_ratio(self.numerators, self.denominators, confidence=confidence)

    def aligned(self, question_ids: Sequence[str]) -> tuple[list[int], list[int]]:
        """Numerators and denominators in the order of ``question_ids`` (0/0 for a
        question this run did not answer)."""
        ys, xs = self.aligned_arrays(question_ids)
        return ys.tolist(), xs.tolist()

    def aligned_arrays(self, question_ids: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`aligned` as two arrays (what the contrasts compute on)."""
        rows = _rows_of(self.question_ids, question_ids)
        if rows is None:  # the same questions in the same order: the common case (one run's own figures)
            return _array(self.numerators), _array(self.denominators)
        # A trailing 0 is what row −1 (not answered) reads.
        return np.append(_array(self.numerators), 0)[rows], np.append(_array(self.denominators), 0)[rows]


@dataclass(frozen=True, slots=True)
class AnswerValues:
    """Per-answer values of a ratio whose per-answer mean is reported (SPEC §4):
    ``values[i]`` for the answer to ``question_ids[i]``, ``None`` where undefined."""

    question_ids: tuple[str, ...]
    values: tuple[float | None, ...]

    def interval(self, *, confidence: float = DEFAULT_CONFIDENCE) -> Interval:
        """:func:`mean_interval` of the defined values."""
        return mean_interval(self.values, confidence=confidence)

    def as_units(self, question_ids: Sequence[str]) -> tuple[list[float], list[int]]:
        """The mean as a ratio over ``question_ids``: numerator the value (0 when
        undefined or unanswered), denominator 1 where defined, else 0; Σy/Σx is then
        the mean of the defined values, so means pair like ratios."""
        ys, xs = self.unit_arrays(question_ids)
        return ys.tolist(), xs.tolist()

    def unit_arrays(self, question_ids: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`as_units` as two arrays (float64 values, int64 0/1)."""
        values = np.empty(len(self.values) + 1, dtype=object)  # the trailing None is what row −1 reads
        values[:-1] = self.values
        rows = _rows_of(self.question_ids, question_ids)
        values = values[:-1] if rows is None else values[rows]
        undefined = np.equal(values, None)
        return np.where(undefined, 0.0, values).astype(np.float64), (~undefined).astype(np.int64)


def _array(counts: Sequence[int]) -> np.ndarray:
    """``counts`` as an array (an empty one as int64, not numpy's float default)."""
    return np.asarray(counts) if len(counts) else np.zeros(0, dtype=np.int64)


def _rows_of(names: tuple[str, ...], question_ids: Sequence[str]) -> np.ndarray | None:
    """Row of each of ``question_ids`` in ``names`` (−1 where absent; a name listed
    twice reads its last row), or ``None`` when they are ``names`` itself, in order,
    each once (nothing to align)."""
    if len(question_ids) == len(names) and tuple(question_ids) == names and len(set(names)) == len(names):
        return None
    at = {q: i for i, q in enumerate(names)}
    return np.fromiter((at.get(q, -1) for q in question_ids), dtype=np.int64, count=len(question_ids))


Term = tuple[int, Sequence[float], Sequence[float]]


def _term_arrays(terms: Sequence[Term]) -> list[tuple[int, np.ndarray, np.ndarray]]:
    """``terms`` with ``y``/``x`` as arrays (ints stay int64, values float64),
    checked: aligned lengths and ``0 ≤ y ≤ x`` (``ValueError`` naming the first bad pair)."""
    lengths = {len(y) for _, y, _ in terms} | {len(x) for _, _, x in terms}
    if len(lengths) > 1:
        raise ValueError(f"contrast terms must be aligned by question, got lengths {sorted(lengths)}")
    arrays = []
    for sign, ys, xs in terms:
        y, x = _array(ys), _array(xs)
        bad = _first_bad_pair(y, x)
        if bad is not None:
            raise ValueError(f"counts must satisfy 0 ≤ numerator ≤ denominator, not {ys[bad]}/{xs[bad]}")
        arrays.append((sign, y, x))
    return arrays


def _exact_sum(values: np.ndarray) -> float:
    """``math.fsum`` of ``values`` (an integer array is summed as integers)."""
    if values.dtype.kind in "iub":
        return float(int(values.sum(dtype=np.int64)))
    return _fsum(values)


def _contrast_arrays(terms: Sequence[tuple[int, np.ndarray, np.ndarray]], *,
                     variance: bool = True) -> tuple[float | None, float | None, int]:
    """:func:`_contrast` of checked terms (:func:`_term_arrays`); with ``variance=False``
    the variance is not computed (``None``)."""
    size = len(terms[0][2]) if terms else 0
    carried = np.zeros(size, dtype=bool)
    for _, _, x in terms:
        carried |= x > 0
    n = int(carried.sum())
    totals = [_exact_sum(x) for _, _, x in terms]
    if any(total == 0 for total in totals):
        return None, None, n
    ratios = [_exact_sum(y) / total for (_, y, _), total in zip(terms, totals, strict=True)]
    estimate = math.fsum(sign * r for (sign, _, _), r in zip(terms, ratios, strict=True))
    if n < 2 or not variance:
        return estimate, None, n
    # The influence of each question: its terms summed with one rounding (fsum's), which a
    # single addition gives for two terms; more (the change of a gap) take fsum row by row.
    parts = [sign * (y - r * x) / total for (sign, y, x), r, total in zip(terms, ratios, totals, strict=True)]
    if len(parts) <= 2:
        influence = parts[0] if len(parts) == 1 else parts[0] + parts[1]
    else:
        influence = np.array([math.fsum(row) for row in zip(*(part.tolist() for part in parts), strict=True)])
    return estimate, n / (n - 1) * _fsum(influence * influence), n


def _contrast(terms: Sequence[Term]) -> tuple[float | None, float | None, int]:
    """``Σ sign·R_k`` over aligned per-question units with its linearized variance.

    ``terms``: ``(sign, y, x)`` with ``y``/``x`` aligned by question; ``R_k =
    Σy/Σx``. The influence of question q is ``d_q = Σ sign·(y_kq − R_k·x_kq)/X_k``
    and ``Var = n/(n−1)·Σd_q²`` over the ``n`` questions with a unit in any term
    (SPEC §4.5's paired difference is the two-term case). Returns (estimate or
    ``None`` when a denominator is 0, variance or ``None`` when n < 2, n).
    Raises ``ValueError`` on terms of different lengths or a pair breaking
    ``0 ≤ y ≤ x``.
    """
    return _contrast_arrays(_term_arrays(terms))


def contrast_interval(terms: Sequence[Term], *, confidence: float = DEFAULT_CONFIDENCE,
                      n_units: int = 0) -> Interval:
    """``Σ sign·R_k`` of one run's pooled ratios over the same answers, with its
    normal interval clipped to [−1, 1] (SPEC §4.5, linearized as the paired
    difference): the gap ``coverage − support`` is ``[(1, cited, claims),
    (−1, supported, labeled cited)]``. ``n_answers`` = answers with a unit in any
    term; ``n_units`` as given; ``n_eff`` ``None``; method ``paired-clustered``.
    Estimate and interval ``None`` when a denominator is 0; interval ``None`` for
    fewer than two answers.
    """
    check_confidence(confidence)
    estimate, variance, n = _contrast(terms)
    if estimate is None or variance is None:
        return Interval(estimate, None, None, confidence, n, n_units, None, PAIRED_CLUSTERED)
    spread = z_value(confidence) * math.sqrt(variance)
    return Interval(estimate, max(-1.0, estimate - spread), min(1.0, estimate + spread), confidence, n, n_units,
                    None, PAIRED_CLUSTERED)


def paired_contrast(a_terms: Sequence[Term], b_terms: Sequence[Term], *,
                    confidence: float = DEFAULT_CONFIDENCE) -> PairedDifference:
    """``b − a`` where each side is ``Σ sign·R_k`` of its terms, all aligned by the
    questions both runs answered (SPEC §4.5). One ratio a side is
    :func:`paired_difference`; two give the change of a gap; a per-answer mean
    enters as :meth:`AnswerValues.as_units`. Interval ``Δ ± z·√Var(Δ)`` clipped
    to [−1, 1]; ``None`` when either side is undefined or fewer than two
    questions carry a unit.
    """
    check_confidence(confidence)
    a_terms, b_terms = _term_arrays(a_terms), _term_arrays(b_terms)
    a, _, _ = _contrast_arrays(a_terms, variance=False)
    b, _, _ = _contrast_arrays(b_terms, variance=False)
    flipped = [(-sign, y, x) for sign, y, x in a_terms]
    delta, variance, n = _contrast_arrays(_term_arrays([*flipped, *b_terms]))
    if a is None or b is None:
        return PairedDifference(a, b, None, None, None, confidence, n)
    if variance is None:
        return PairedDifference(a, b, delta, None, None, confidence, n)
    spread = z_value(confidence) * math.sqrt(variance)
    return PairedDifference(a, b, delta, max(-1.0, delta - spread), min(1.0, delta + spread), confidence, n)
