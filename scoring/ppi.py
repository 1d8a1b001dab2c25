"""Judge-assisted estimates: prediction-powered inference, PPI++ (SPEC §4.6).

A judge labels every cited claim of a run; humans label a probability sample of
its answers. The judge's figure is biased; the humans' is unbiased but wide.
PPI++ (Angelopoulos, Duchi & Zrnic 2023, arXiv:2311.01453) combines them:

    θ̂(λ) = λ·mean(Ŷ_unlabeled) + mean(Y − λ·Ŷ)

with the power-tuning λ̂ that minimises the variance, clipped to [0, 1]. The
interval is Wald's, ``θ̂ ± z·√(V_imputed + V_rectifier)``. The sample's
correction keeps it valid however wrong the judge is; a judge that tracks the
humans makes it narrower than the humans' alone, and a useless one gets
``λ̂ ≈ 0`` (the estimate is then the humans' alone).

Claims of one answer move together (SPEC §4.5), so every mean is a pooled ratio
over answers and every variance is computed from per-answer sums:
``Σᵢ(sᵢ − r·mᵢ)² / M²`` for the sums ``sᵢ`` of ``mᵢ`` units (ddof 0, ppi-python's
convention). With one unit per answer every figure, λ̂ included, is exactly
``ppi_py.ppi_mean_ci(Y, Yhat, Yhat_unlabeled, alpha)`` of ppi-python 0.2.3,
which the tests check to 1e-9; ppi-python itself is not a dependency.

Inputs are per-answer sums: ``human[i]`` the units of answer i the humans call
1 (e.g. SUPPORTED claims), ``judge[i]`` the sum of the judge's predictions on
the same units (each in [0, 1]), ``units[i]`` the units (e.g. cited claims).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from scoring.budgets import BUDGET_HALF_WIDTHS, Budget
from scoring.intervals import (
    DEFAULT_CONFIDENCE,
    Interval,
    PairedDifference,
    check_confidence,
    clustered_ratio,
    interval_key,
    z_value,
)
from scoring.lazy import np  # loaded on first use: keeps start-up fast (SPEC §7)

METHOD = "ppi++"
INDEPENDENT = "ppi++-independent"
# λ̂ below this: the judge does not help, the estimate is the humans' alone (run page, SPEC §4.6)
NEGLIGIBLE_LAMBDA = 0.05


@dataclass(frozen=True, slots=True)
class PPIEstimate:
    """A PPI++ estimate of a claim-level mean with its interval (SPEC §4.6).

    ``estimate`` in [0, 1] (``None`` without a fully labeled answer); ``low``/
    ``high`` its Wald interval at ``level`` clipped to [0, 1] (``None`` with fewer
    than two labeled answers); ``lam`` the power-tuning λ̂ in [0, 1];
    ``variance`` the estimate's (``V_imputed + V_rectifier``) and
    ``variance_imputed`` / ``variance_rectifier`` its two terms;
    ``n_human_units``/``n_human_answers`` the labeled sample (n),
    ``n_judge_units``/``n_judge_answers`` the judge-only rest (N);
    ``effective_human_labels`` = ``n·V_human-only / V_PPI`` (both variances in
    the ddof-0 convention above; ``None`` when V_PPI = 0); ``human_only`` the
    humans' figure on the sample with its clustered Wilson interval (SPEC §4.5);
    ``judge_only`` the judge's raw figure over every unit.
    """

    estimate: float | None
    low: float | None
    high: float | None
    level: float
    lam: float | None
    variance: float | None
    variance_imputed: float | None
    variance_rectifier: float | None
    n_human_units: int
    n_human_answers: int
    n_judge_units: int
    n_judge_answers: int
    effective_human_labels: float | None
    human_only: Interval
    judge_only: float | None
    method: str = METHOD

    @property
    def defined(self) -> bool:
        return self.low is not None and self.high is not None

    @property
    def half_width(self) -> float | None:
        """Half the interval's width, ``None`` when there is no interval."""
        return None if not self.defined else (self.high - self.low) / 2

    @property
    def judge_helps(self) -> bool:
        """``False`` when λ̂ is near 0: the judge adds nothing, the estimate is the humans'."""
        return self.lam is not None and self.lam >= NEGLIGIBLE_LAMBDA

    def as_dict(self) -> dict:
        """JSON form (SPEC §4.6): ``{"method": "ppi++", "estimate", "ci95": [lo, hi] | null,
        "lambda", "n_human_units", "n_human_answers", "n_judge_units",
        "effective_human_labels", "judge", "human_only": {"estimate", "ci95"},
        "judge_only"}``; ``judge`` is left ``None`` for the caller to name. At a
        level other than 0.95 the interval keys are ``ci`` and ``level`` is added."""
        key = interval_key(self.level)
        out = {
            "method": self.method,
            "estimate": self.estimate,
            key: [self.low, self.high] if self.defined else None,
            "lambda": self.lam,
            "n_human_units": self.n_human_units,
            "n_human_answers": self.n_human_answers,
            "n_judge_units": self.n_judge_units,
            "effective_human_labels": self.effective_human_labels,
            "judge": None,
            "human_only": {
                "estimate": self.human_only.estimate,
                key: [self.human_only.low, self.human_only.high] if self.human_only.defined else None,
            },
            "judge_only": self.judge_only,
        }
        if key == "ci":
            out["level"] = self.level
        return out


def _arrays(*columns: Sequence[float]) -> list[np.ndarray]:
    arrays = [np.asarray(column, dtype=float) for column in columns]
    if len({len(a) for a in arrays}) > 1:
        raise ValueError(f"per-answer columns of different lengths: {[len(a) for a in arrays]}")
    return arrays


def _check_sums(name: str, sums: np.ndarray, units: np.ndarray) -> None:
    if np.any(units < 0) or np.any(sums < 0) or np.any(sums > units):
        raise ValueError(f"{name} sums must lie between 0 and the answer's units")


def cluster_variance(sums: np.ndarray, units: np.ndarray) -> float:
    """Variance of the pooled mean ``Σs/Σm`` from per-answer sums, ddof 0 (SPEC §4.6).

    ``Σᵢ(sᵢ − r·mᵢ)² / M²`` with ``r = Σs/M``, ``M = Σm`` > 0. With one unit per
    answer it is ``np.var(s) / n``, ppi-python's ``std(…)²/n``.
    """
    total = units.sum()
    r = sums.sum() / total
    return float(np.sum((sums - r * units) ** 2) / total**2)


def power_tuning(
    human: np.ndarray, judge: np.ndarray, units: np.ndarray, judge_unlabeled: np.ndarray, units_unlabeled: np.ndarray
) -> float:
    """PPI++'s variance-minimising λ̂, clipped to [0, 1] (SPEC §4.6).

    ``λ̂ = C / (τ²·(n/M_l² + N/M_u²))``: ``C = Σᵢ aᵢbᵢ / M_l²`` the covariance of
    the labeled means of Y and Ŷ (``aᵢ``, ``bᵢ`` their per-answer residuals),
    ``τ² = Σₖ(ŝₖ − p̄·mₖ)² / (K − 1)`` the per-answer variance of the judge's
    sums pooled over all K = n + N answers. With one unit per answer this is
    ppi-python's ``cov(Y, Ŷ) / ((1 + n/N)·var(Ŷ ∪ Ŷ_unlabeled))``. ``0`` when
    nothing is unlabeled or the judge's predictions do not vary (any λ then
    gives the same estimate; ppi-python returns NaN there).
    """
    n, big_n = len(units), len(units_unlabeled)
    m_l, m_u = units.sum(), units_unlabeled.sum()
    if big_n == 0 or m_u == 0 or n == 0:
        return 0.0
    a = human - human.sum() / m_l * units
    b = judge - judge.sum() / m_l * units
    covariance = float(np.dot(a, b)) / m_l**2
    all_sums = np.concatenate([judge, judge_unlabeled])
    all_units = np.concatenate([units, units_unlabeled])
    pooled = all_sums.sum() / all_units.sum()
    tau2 = float(np.sum((all_sums - pooled * all_units) ** 2)) / (n + big_n - 1)
    denominator = tau2 * (n / m_l**2 + big_n / m_u**2)
    if denominator <= 0:
        return 0.0
    return float(np.clip(covariance / denominator, 0.0, 1.0))


def ppi_mean(
    human: Sequence[int],
    judge: Sequence[float],
    units: Sequence[int],
    judge_unlabeled: Sequence[float],
    units_unlabeled: Sequence[int],
    *,
    confidence: float = DEFAULT_CONFIDENCE,
    lam: float | None = None,
    judge_only: float | None = None,
) -> PPIEstimate:
    """PPI++ estimate of a claim-level mean (support, supported rate) (SPEC §4.6).

    Labeled answers (fully labeled members of the probability sample), one entry
    each: ``human`` the human 1s, ``judge`` the sum of the judge's predictions on
    the same units, ``units`` the units. Every other answer with a unit:
    ``judge_unlabeled`` and ``units_unlabeled``. Answers with 0 units are
    ignored. ``lam`` fixes λ (``None``: PPI++'s λ̂). ``judge_only`` is the judge's
    raw figure when the caller has a better one than the mean of the
    predictions (claims the judge did not label). Raises ``ValueError`` on
    columns of different lengths, sums outside [0, units] or a bad level.
    """
    check_confidence(confidence)
    human_a, judge_a, units_a = _arrays(human, judge, units)
    judge_u, units_u = _arrays(judge_unlabeled, units_unlabeled)
    _check_sums("human", human_a, units_a)
    _check_sums("judge", judge_a, units_a)
    _check_sums("judge", judge_u, units_u)
    keep, keep_u = units_a > 0, units_u > 0
    human_a, judge_a, units_a = human_a[keep], judge_a[keep], units_a[keep]
    judge_u, units_u = judge_u[keep_u], units_u[keep_u]
    n, big_n = len(units_a), len(units_u)
    m_l, m_u = int(units_a.sum()), int(units_u.sum())

    human_only = clustered_ratio(
        [int(round(y)) for y in human_a], [int(m) for m in units_a], confidence=confidence
    )
    if judge_only is None and m_l + m_u:
        judge_only = float((judge_a.sum() + judge_u.sum()) / (m_l + m_u))
    if n == 0:
        return PPIEstimate(
            None, None, None, confidence, None, None, None, None, 0, 0, m_u, big_n, None, human_only, judge_only
        )

    if lam is None:
        lam = power_tuning(human_a, judge_a, units_a, judge_u, units_u)
    if big_n == 0:
        lam = 0.0  # nothing left to impute: the humans' sample is the whole run
    rectifier = human_a - lam * judge_a
    imputed_mean = float(judge_u.sum() / m_u) if m_u else 0.0
    estimate = lam * imputed_mean + float(rectifier.sum() / m_l)
    v_imputed = lam**2 * cluster_variance(judge_u, units_u) if m_u else 0.0
    v_rectifier = cluster_variance(rectifier, units_a)
    variance = v_imputed + v_rectifier
    v_human = cluster_variance(human_a, units_a)
    effective = m_l * v_human / variance if variance > 0 else None
    low = high = None
    if n >= 2:
        spread = z_value(confidence) * math.sqrt(variance)
        low, high = max(0.0, estimate - spread), min(1.0, estimate + spread)
    return PPIEstimate(
        estimate=min(1.0, max(0.0, estimate)),
        low=low,
        high=high,
        level=confidence,
        lam=float(lam),
        variance=variance,
        variance_imputed=v_imputed,
        variance_rectifier=v_rectifier,
        n_human_units=m_l,
        n_human_answers=n,
        n_judge_units=m_u,
        n_judge_answers=big_n,
        effective_human_labels=effective,
        human_only=human_only,
        judge_only=judge_only,
    )


def ppi_answers_needed(
    estimate: PPIEstimate,
    *,
    available: int | None = None,
    half_widths: Sequence[float] = BUDGET_HALF_WIDTHS,
) -> list[Budget] | None:
    """Label budget of a PPI++ estimate per target half-width (SPEC §4.5, §4.6).

    The rectifier's variance shrinks as ``1/n`` with the labeled answers, the
    imputed term does not: ``n' = ⌈n·V_rectifier / ((h/z)² − V_imputed)⌉``
    answers in all. A half-width below the imputed term's alone (``needed``
    ``None``: the judge's own sampling error is wider), or ``n'`` above
    ``available`` (the run's answers), is not ``reachable``; ``more`` is then
    the answers still labelable. ``None`` without an interval.
    """
    if not estimate.defined:
        return None
    n = estimate.n_human_answers
    z = z_value(estimate.level)
    budgets = []
    for h in half_widths:
        room = (h / z) ** 2 - estimate.variance_imputed
        if room <= 0:
            needed = None
        elif estimate.variance_rectifier == 0:
            needed = n
        else:
            needed = math.ceil(n * estimate.variance_rectifier / room)
        reachable = needed is not None and (available is None or needed <= available)
        if reachable:
            budgets.append(Budget(h, needed, max(0, needed - n), True))
        else:
            cap = available if available is not None else n
            budgets.append(Budget(h, needed, max(0, cap - n), False))
    return budgets


def independent_difference(a: PPIEstimate, b: PPIEstimate) -> PairedDifference:
    """``b − a`` of two runs' estimates from independent samples (SPEC §4.6).

    The samples are drawn separately, so the variances add:
    ``Δ ± z·√(V_A + V_B)`` clipped to [−1, 1], at ``a``'s level. ``n_questions``
    carries the smaller of the two samples' answers. No interval when either
    estimate has none. Raises ``ValueError`` when the two levels differ.
    """
    if not math.isclose(a.level, b.level):
        raise ValueError(f"estimates at levels {a.level} and {b.level} cannot be compared")
    n = min(a.n_human_answers, b.n_human_answers)
    if a.estimate is None or b.estimate is None:
        return PairedDifference(a.estimate, b.estimate, None, None, None, a.level, n, INDEPENDENT)
    delta = b.estimate - a.estimate
    if not (a.defined and b.defined):
        return PairedDifference(a.estimate, b.estimate, delta, None, None, a.level, n, INDEPENDENT)
    spread = z_value(a.level) * math.sqrt(a.variance + b.variance)
    return PairedDifference(
        a.estimate, b.estimate, delta, max(-1.0, delta - spread), min(1.0, delta + spread), a.level, n, INDEPENDENT
    )
