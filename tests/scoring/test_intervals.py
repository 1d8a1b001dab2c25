"""Intervals with answers as clusters (SPEC §4.5), checked by hand and against statsmodels."""

from __future__ import annotations

import math

import numpy as np
import pytest
import statsmodels.api as sm
from statsmodels.stats.proportion import proportion_confint
from statsmodels.stats.weightstats import DescrStatsW

from scoring.budgets import answers_needed, non_inferior, settle_budget
from scoring.intervals import (
    Z_95,
    AnswerValues,
    Units,
    clustered_ratio,
    contrast_interval,
    interval_key,
    mean_interval,
    paired_contrast,
    paired_difference,
    ratio_variance,
    wilson,
    z_value,
)


def test_z_is_the_spec_constant_and_levels_are_checked():
    assert z_value(0.95) == Z_95 == 1.959963984540054
    assert z_value(0.9) == pytest.approx(1.6448536269514722)
    for bad in (0, 1, 1.5, -0.1, float("nan")):
        with pytest.raises(ValueError, match="confidence"):
            z_value(bad)


def test_one_answer_uses_its_claims_as_the_size():
    """3 SUPPORTED of 5 in a single answer: n = 1 < 2, so n_eff = X = 5 and the
    interval is Wilson's at m = 5: z² = 3.8415, centre 0.6 + 3.8415/10 = 0.9841,
    spread 1.96·√(0.24/5 + 3.8415/100) = 0.5762, denominator 1.7683 →
    (0.2307, 0.8824)."""
    interval = clustered_ratio([3], [5])
    assert (interval.estimate, interval.n_answers, interval.n_units, interval.n_eff) == (0.6, 1, 5, 5.0)
    assert interval.low == pytest.approx(0.2307, abs=1e-4)
    assert interval.high == pytest.approx(0.8824, abs=1e-4)
    assert (interval.low, interval.high) == pytest.approx(proportion_confint(3, 5, alpha=0.05, method="wilson"))


def test_every_answer_one_claim():
    """y = 1,1,0,1 over x = 1,1,1,1: R = 0.75, residuals .25,.25,−.75,.25, Σe² = 0.75,
    v = 4/3 · 0.75 / 16 = 0.0625, R(1−R)/v = 0.1875/0.0625 = 3 → n_eff = min(4, 3) = 3."""
    interval = clustered_ratio([1, 1, 0, 1], [1, 1, 1, 1])
    assert ratio_variance([1, 1, 0, 1], [1, 1, 1, 1]) == pytest.approx(0.0625)
    assert interval.n_eff == pytest.approx(3.0)
    assert (interval.low, interval.high) == pytest.approx(
        proportion_confint(0.75 * 3, 3, alpha=0.05, method="wilson")
    )


def test_one_answer_holding_most_claims_counts_as_few():
    """x = 10,1,1, y = 10,0,0: R = 10/12; residuals 1.667, −.833, −.833, Σe² = 4.1667,
    v = 3/2 · 4.1667/144 = 0.043403, R(1−R)/v = 0.138889/0.043403 = 3.2: twelve
    claims weigh like 3.2."""
    interval = clustered_ratio([10, 0, 0], [10, 1, 1])
    assert interval.estimate == pytest.approx(10 / 12)
    assert interval.n_eff == pytest.approx(3.2)
    assert (interval.n_answers, interval.n_units) == (3, 12)
    assert interval.high - interval.low > 0.5


@pytest.mark.parametrize(("numerators", "low", "high"), [([0, 0], 0.0, 3.8415 / 8.8415), ([3, 2], 5 / 8.8415, 1.0)])
def test_r_zero_and_one_are_not_degenerate(numerators, low, high):
    """R = 0 or 1: every residual is 0, v = 0, n_eff = X = 5; Wilson gives
    [0, z²/(5+z²)] = [0, 0.4345] and [5/(5+z²), 1] = [0.5655, 1], never [1, 1]."""
    interval = clustered_ratio(numerators, [3, 2])
    assert interval.n_eff == 5.0
    assert interval.low == pytest.approx(low, abs=1e-4)
    assert interval.high == pytest.approx(high, abs=1e-4)


def test_zero_denominator_is_null_everywhere():
    interval = clustered_ratio([0, 0], [0, 0])
    assert (interval.estimate, interval.low, interval.high, interval.n_eff) == (None, None, None, None)
    assert interval.as_dict() == {
        "estimate": None,
        "ci95": None,
        "n_answers": 0,
        "n_units": 0,
        "n_eff": None,
        "method": "wilson-clustered",
    }
    assert answers_needed(interval) is None


def test_answers_without_units_are_not_clusters():
    assert clustered_ratio([3, 0], [5, 0]) == clustered_ratio([3], [5])


def test_bad_counts_are_refused():
    with pytest.raises(ValueError, match="numerator"):
        clustered_ratio([4], [3])
    with pytest.raises(ValueError, match="numerators"):
        clustered_ratio([1, 2], [3])


def test_variance_equals_statsmodels_cluster_robust_intercept():
    """The linearized variance is the CR1 cluster-robust variance of the mean of the
    unit outcomes (intercept-only OLS, G/(G−1) correction; (N−1)/(N−K) = 1 with K = 1)."""
    rng = np.random.default_rng(7)
    sizes = rng.integers(1, 9, size=40)
    numerators = [int(rng.binomial(s, rng.uniform(0.2, 0.95))) for s in sizes]
    units = np.concatenate([[1.0] * y + [0.0] * (s - y) for y, s in zip(numerators, sizes, strict=True)])
    groups = np.repeat(np.arange(len(sizes)), sizes)
    fit = sm.OLS(units, np.ones(len(units))).fit(cov_type="cluster", cov_kwds={"groups": groups})
    assert ratio_variance(numerators, sizes) == pytest.approx(fit.bse[0] ** 2, rel=1e-10)
    interval = clustered_ratio(numerators, sizes)
    assert interval.estimate == pytest.approx(fit.params[0])
    expected = proportion_confint(interval.estimate * interval.n_eff, interval.n_eff, alpha=0.05, method="wilson")
    assert (interval.low, interval.high) == pytest.approx(expected, rel=1e-12)


def test_wilson_at_other_levels_matches_statsmodels():
    assert wilson(0.3, 20, confidence=0.9) == pytest.approx(proportion_confint(6, 20, alpha=0.1, method="wilson"))


def test_other_levels_change_the_key():
    assert interval_key(0.95) == "ci95"
    interval = clustered_ratio([3, 1], [4, 2], confidence=0.9)
    entry = interval.as_dict()
    assert entry["level"] == 0.9 and "ci" in entry and "ci95" not in entry


def test_per_answer_mean_is_student_t():
    """Values 0.5, 1.0, 0.75, 0.25: mean 0.625, s = 0.3227, t(3, .975) = 3.1824,
    half-width 3.1824 · 0.3227/2 = 0.5135 → (0.1115, 1.1385) clipped to (0.1115, 1)."""
    values = [0.5, 1.0, None, 0.75, 0.25]
    interval = mean_interval(values)
    reference = DescrStatsW(np.array([0.5, 1.0, 0.75, 0.25])).tconfint_mean(alpha=0.05)
    assert interval.estimate == pytest.approx(0.625)
    assert interval.low == pytest.approx(reference[0]) == pytest.approx(0.1115, abs=1e-4)
    assert reference[1] == pytest.approx(1.1385, abs=1e-4) and interval.high == 1.0
    assert interval.n_answers == 4 and interval.method == "student-t"
    assert mean_interval([0.4]).low is None and mean_interval([0.4]).estimate == 0.4


def test_paired_difference_by_hand():
    """Two questions. A: 1/2, 2/2 → R_A = 3/4; B: 0/2, 2/2 → R_B = 1/2; Δ = −1/4.
    d₁ = (0 − 1)/4 − (1 − 1.5)/4 = −0.125; d₂ = (2 − 1)/4 − (2 − 1.5)/4 = 0.125;
    Var = 2/1 · (0.015625·2) = 0.0625, half-width 1.96 · 0.25 = 0.49 → (−0.74, 0.24)."""
    difference = paired_difference([1, 2], [2, 2], [0, 2], [2, 2])
    assert (difference.a, difference.b, difference.delta, difference.n_questions) == (0.75, 0.5, -0.25, 2)
    assert difference.low == pytest.approx(-0.25 - Z_95 * 0.25)
    assert difference.high == pytest.approx(-0.25 + Z_95 * 0.25)
    assert non_inferior(difference, 0.05) is False
    assert non_inferior(difference, 0.75) is True


def test_paired_difference_independent_numpy():
    """The SPEC §4.5 formula written again with numpy arrays, on random counts."""
    rng = np.random.default_rng(3)
    xa, xb = rng.integers(0, 6, 30), rng.integers(0, 6, 30)
    ya, yb = rng.binomial(xa, 0.7), rng.binomial(xb, 0.6)
    ra, rb = ya.sum() / xa.sum(), yb.sum() / xb.sum()
    d = (yb - rb * xb) / xb.sum() - (ya - ra * xa) / xa.sum()
    n = int(((xa > 0) | (xb > 0)).sum())
    half = Z_95 * math.sqrt(n / (n - 1) * (d**2).sum())
    difference = paired_difference(ya, xa, yb, xb)
    assert difference.delta == pytest.approx(rb - ra)
    assert (difference.low, difference.high) == pytest.approx((max(-1, rb - ra - half), min(1, rb - ra + half)))


def test_paired_difference_undefined_cases():
    assert paired_difference([0], [0], [1], [1]).delta is None
    one = paired_difference([1], [2], [1], [1])
    assert one.delta == 0.5 and one.low is None and non_inferior(one, 0.05) is None


def test_label_budget():
    """n = 30 answers, half-width w: needed for h is ⌈30·(w/h)²⌉, capped by the run."""
    interval = clustered_ratio([2] * 15 + [1] * 15, [2] * 30)
    w = interval.half_width
    budgets = answers_needed(interval, available=200)
    assert [b.needed for b in budgets] == [math.ceil(30 * (w / h) ** 2) for h in (0.05, 0.03, 0.02)]
    assert [b.more for b in budgets] == [max(0, b.needed - 30) for b in budgets if b.reachable] + [
        170 for b in budgets if not b.reachable
    ]
    assert any(not b.reachable for b in budgets)
    wide = answers_needed(clustered_ratio([1, 0], [1, 1]), half_widths=(0.9,))
    assert wide[0].more == 0


def test_coverage_of_clustered_population():
    """1,000 seeded samples of 60 answers from a population whose answers have their
    own support rate (beta) and 1–12 claims: the 95% interval covers the population's
    pooled support in at least 93% of samples."""
    rng = np.random.default_rng(2026)
    sizes = rng.integers(1, 13, size=5000)
    rates = rng.beta(4, 1.5, size=5000)
    supported = rng.binomial(sizes, rates)
    truth = supported.sum() / sizes.sum()
    covered = 0
    for _ in range(1000):
        pick = rng.choice(5000, size=60, replace=False)
        interval = clustered_ratio(supported[pick], sizes[pick])
        covered += interval.low <= truth <= interval.high
    assert covered >= 930


# --- contrasts, per-answer means as units, the gate's budget (extensions of SPEC §4.5) --------------------------


def test_two_term_contrast_is_the_paired_difference():
    """paired_contrast with one ratio a side is SPEC §4.5's paired difference, on random counts."""
    rng = np.random.default_rng(11)
    xa, xb = rng.integers(0, 7, 25), rng.integers(0, 7, 25)
    ya, yb = rng.binomial(xa, 0.6), rng.binomial(xb, 0.8)
    assert paired_contrast([(1, ya, xa)], [(1, yb, xb)]) == paired_difference(ya, xa, yb, xb)


def test_gap_interval_by_hand():
    """Two answers. Coverage: cited 2/2 and 1/2 → R_c = 3/4; support: SUPPORTED 1/2 and 1/1 →
    R_s = 2/3; gap = 3/4 − 2/3 = 1/12. Residuals: coverage (2 − 1.5, 1 − 1.5) = (0.5, −0.5),
    support (1 − 4/3, 1 − 2/3) = (−1/3, 1/3). d₁ = 0.5/4 − (−1/3)/3 = 0.125 + 0.1111 = 0.2361,
    d₂ = −0.2361; Var = 2/1 · 2 · 0.2361² = 0.22299, sd 0.47222 → 1/12 ± 1.96·0.47222 =
    (−0.8422, 1.0089), the high end clipped to 1."""
    interval = contrast_interval([(1, [2, 1], [2, 2]), (-1, [1, 1], [2, 1])], n_units=4)
    d = 0.125 + 1 / 9
    assert interval.estimate == pytest.approx(1 / 12)
    assert interval.low == pytest.approx(max(-1, 1 / 12 - Z_95 * math.sqrt(4 * d * d)))
    assert interval.low == pytest.approx(-0.8422, abs=1e-4) and interval.high == 1.0
    assert (interval.n_answers, interval.n_units, interval.method) == (2, 4, "paired-clustered")


def test_mean_as_units_pairs_like_a_ratio():
    """Per-answer support A = (1, 0.5, None), B = (0.5, 0.5, 1) over q1..q3: as units the
    means are (1 + 0.5)/2 = 0.75 and (0.5 + 0.5 + 1)/3 = 2/3, Δ = −1/12; influence
    d = (v_B − m_B·1_B)/n_B − (v_A − m_A·1_A)/n_A: q1 (0.5 − 2/3)/3 − 0.25/2 = −0.18056,
    q2 (−1/6)/3 − (−0.25)/2 = 0.06944, q3 (1/3)/3 − 0 = 0.11111; Var = 3/2 · Σd²."""
    a = AnswerValues(("q1", "q2", "q3"), (1.0, 0.5, None))
    b = AnswerValues(("q1", "q2", "q3"), (0.5, 0.5, 1.0))
    questions = ["q1", "q2", "q3"]
    difference = paired_contrast([(1, *a.as_units(questions))], [(1, *b.as_units(questions))])
    d = np.array([(0.5 - 2 / 3) / 3 - 0.25 / 2, (0.5 - 2 / 3) / 3 + 0.25 / 2, (1 - 2 / 3) / 3])
    half = Z_95 * math.sqrt(1.5 * (d**2).sum())
    assert (difference.a, difference.b) == (pytest.approx(0.75), pytest.approx(2 / 3))
    assert difference.delta == pytest.approx(-1 / 12)
    assert (difference.low, difference.high) == pytest.approx((-1 / 12 - half, -1 / 12 + half))
    assert difference.n_questions == 3


def test_units_align_by_question_and_leave_unanswered_questions_empty():
    units = Units(("q2", "q1"), (1, 2), (3, 2))
    assert units.aligned(["q1", "q2", "q9"]) == ([2, 1, 0], [2, 3, 0])
    assert units.interval() == clustered_ratio([1, 2], [3, 2])


def test_settle_budget_by_hand():
    """The hand example above: Δ = −0.25, reach 1.96 · 0.25 = 0.49 on n = 2 questions.
    Bound −0.05: distance |−0.25 + 0.05| = 0.2, questions needed ⌈2 · (0.49/0.2)²⌉ =
    ⌈12.005⌉ = 13; with 40 questions shared that is 11 more; with 2 it cannot be reached.
    Bound −0.25: the delta sits on it, no number of answers settles it."""
    difference = paired_difference([1, 2], [2, 2], [0, 2], [2, 2])
    budget = settle_budget(difference, 0.05, available=40)
    assert (budget.half_width, budget.needed, budget.more, budget.reachable) == (pytest.approx(0.2), 13, 11, True)
    assert settle_budget(difference, 0.05, available=2).reachable is False
    assert settle_budget(difference, 0.25) is None


# --- the numpy arithmetic (issue 24) keeps the loops' figures --------------------------------------------------


def test_constant_ratio_has_zero_variance_and_n_eff_exactly_x():
    """Every answer 4/5: residuals yᵢ − 0.8·5 are exactly 0, so v = 0 and n_eff = X = 5,000."""
    interval = clustered_ratio([4] * 1000, [5] * 1000)
    assert ratio_variance([4] * 1000, [5] * 1000) == 0.0
    assert interval.n_eff == 5000.0 and interval.n_units == 5000 and type(interval.n_units) is int


def test_bad_counts_name_the_first_bad_pair():
    with pytest.raises(ValueError, match="not 3/2$"):
        clustered_ratio([1, 3, 5], [1, 2, 4])
    with pytest.raises(ValueError, match="not -1/2$"):
        paired_difference([0, 0], [1, 1], [0, -1], [1, 2])
    with pytest.raises(ValueError, match="not 1.5/1$"):
        contrast_interval([(1, [0.5, 1.5], [1, 1])])


def test_four_term_contrast_sums_each_question_with_fsum():
    """The change of a gap (four terms, run A's signs flipped) with each question's influence
    summed by math.fsum, as SPEC §4.5's linearization writes it; here question by question in Python."""
    rng = np.random.default_rng(3)
    xs = [rng.integers(1, 9, 200) for _ in range(4)]
    ys = [rng.binomial(x, p) for x, p in zip(xs, (0.9, 0.6, 0.8, 0.7), strict=True)]
    signs = (1, -1, 1, -1)  # A's gap, B's gap
    flipped = (-1, 1, 1, -1)  # B − A
    ratios = [y.sum() / x.sum() for y, x in zip(ys, xs, strict=True)]
    influence = [math.fsum(s * (int(y[q]) - r * int(x[q])) / int(x.sum())
                           for s, y, x, r in zip(flipped, ys, xs, ratios, strict=True)) for q in range(200)]
    variance = 200 / 199 * math.fsum(d * d for d in influence)
    difference = paired_contrast([(signs[0], ys[0], xs[0]), (signs[1], ys[1], xs[1])],
                                 [(signs[2], ys[2], xs[2]), (signs[3], ys[3], xs[3])])
    assert difference.delta == math.fsum(s * r for s, r in zip(flipped, ratios, strict=True))
    assert difference.high - difference.delta == pytest.approx(Z_95 * math.sqrt(variance), rel=1e-14)


def test_units_align_as_lists_or_arrays_and_a_repeated_question_reads_its_last_answer():
    units = Units(("q1", "q2", "q1"), (1, 2, 3), (4, 5, 6))
    assert units.aligned(("q1", "q2", "q1")) == ([3, 2, 3], [6, 5, 6])
    ys, xs = Units(("q2", "q1"), (1, 2), (3, 2)).aligned_arrays(["q9", "q1"])
    assert ys.tolist() == [0, 2] and xs.tolist() == [0, 2] and ys.dtype == np.int64
    assert Units((), (), ()).aligned(["q1"]) == ([0], [0])
    values = AnswerValues(("q1", "q2"), (0.25, None))
    assert values.as_units(["q2", "q1", "q3"]) == ([0.0, 0.25, 0.0], [0, 1, 0])
    assert AnswerValues((), ()).as_units([]) == ([], [])
