"""PPI++ estimates (SPEC §4.6): against ppi-python, by hand, and by simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest
import statsmodels.api as sm
from ppi_py import ppi_mean_ci, ppi_mean_pointestimate
from ppi_py.ppi import _calc_lam_glm

from scoring.budgets import non_inferior
from scoring.intervals import Z_95, clustered_ratio
from scoring.ppi import (
    NEGLIGIBLE_LAMBDA,
    cluster_variance,
    independent_difference,
    power_tuning,
    ppi_answers_needed,
    ppi_mean,
)


def _ones(size: int) -> np.ndarray:
    return np.ones(size)


def _ppi_py_lambda(y: np.ndarray, yhat: np.ndarray, yhat_unlabeled: np.ndarray) -> float:
    """λ̂ exactly as ppi_py.ppi_mean_ci computes it before it recurses with lam fixed."""
    point = ppi_mean_pointestimate(y, yhat, yhat_unlabeled, lam=1)
    return float(
        _calc_lam_glm(
            (y - point).reshape(-1, 1),
            (yhat - point).reshape(-1, 1),
            (yhat_unlabeled - point).reshape(-1, 1),
            np.eye(1),
            clip=True,
        )
    )


def _judge(rng: np.random.Generator, y: np.ndarray, flip_supported: float, flip_unsupported: float) -> np.ndarray:
    """The judge's 0/1 label: a SUPPORTED claim is called UNSUPPORTED with probability
    ``flip_supported``, an UNSUPPORTED one SUPPORTED with ``flip_unsupported``."""
    flip = np.where(y == 1, rng.random(y.shape) < flip_supported, rng.random(y.shape) < flip_unsupported)
    return np.where(flip, 1 - y, y).astype(float)


@pytest.mark.parametrize(
    ("seed", "n", "big_n", "flip_supported", "flip_unsupported"),
    [(1, 50, 500, 0.05, 0.2), (2, 200, 5000, 0.1, 0.1), (3, 30, 40, 0.3, 0.3), (4, 120, 900, 0.5, 0.5),
     (5, 400, 1000, 0.0, 0.4)],
)
def test_one_claim_per_answer_equals_ppi_python(seed, n, big_n, flip_supported, flip_unsupported):
    """One unit per answer: estimate, interval and λ̂ are ppi_py.ppi_mean_ci's
    (ppi-python 0.2.3, alpha = 0.05) to 1e-9, for good, poor and useless judges."""
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.7).astype(float)
    y_unlabeled = (rng.random(big_n) < 0.7).astype(float)
    yhat = _judge(rng, y, flip_supported, flip_unsupported)
    yhat_unlabeled = _judge(rng, y_unlabeled, flip_supported, flip_unsupported)

    ours = ppi_mean(y, yhat, _ones(n), yhat_unlabeled, _ones(big_n), confidence=0.95)
    (low,), (high,) = ppi_mean_ci(y, yhat, yhat_unlabeled, alpha=0.05)
    reference_lambda = _ppi_py_lambda(y, yhat, yhat_unlabeled)
    reference_estimate = float(ppi_mean_pointestimate(y, yhat, yhat_unlabeled)[0])

    assert 0 < low < high < 1  # the interval is not clipped, so the comparison is whole
    assert ours.lam == pytest.approx(reference_lambda, abs=1e-9)
    assert ours.estimate == pytest.approx(reference_estimate, abs=1e-9)
    assert (ours.low, ours.high) == pytest.approx((low, high), abs=1e-9)
    assert (ours.n_human_units, ours.n_human_answers, ours.n_judge_units) == (n, n, big_n)


def test_one_claim_per_answer_with_fractional_predictions_equals_ppi_python():
    """Predictions in [0, 1] (a claim the judge did not label counts 0.5) are means
    too: still ppi-python's figures to 1e-9."""
    rng = np.random.default_rng(11)
    y = (rng.random(80) < 0.6).astype(float)
    yhat = np.clip(y * 0.7 + rng.random(80) * 0.3, 0, 1)
    yhat_unlabeled = rng.random(700)

    ours = ppi_mean(y, yhat, _ones(80), yhat_unlabeled, _ones(700))
    (low,), (high,) = ppi_mean_ci(y, yhat, yhat_unlabeled, alpha=0.05)

    assert ours.lam == pytest.approx(_ppi_py_lambda(y, yhat, yhat_unlabeled), abs=1e-9)
    assert (ours.low, ours.high) == pytest.approx((low, high), abs=1e-9)


def test_judge_equal_to_humans_gives_lambda_one_and_the_judges_sampling_error():
    """Y = Ŷ = 1,0,1,0 (n = 4); the judge alone says SUPPORTED on 90 of N = 100.
    cov(Y, Ŷ) = var(Y) = 0.25; the 104 predictions hold 92 ones: var (ddof 1) =
    104·(92/104)(12/104)/103 = 0.103062; λ̂ = 0.25 / ((1 + 4/100)·0.103062) = 2.33,
    clipped to 1. Then the rectifier Y − Ŷ is 0 everywhere: the estimate is the
    judge's 90/100 = 0.9 and its variance the judge's sampling error alone,
    0.9·0.1/100 = 0.0009: 0.9 ± 1.96·0.03 = (0.8412, 0.9588)."""
    y = np.array([1.0, 0, 1, 0])
    unlabeled = np.array([1.0] * 90 + [0.0] * 10)

    estimate = ppi_mean(y, y, _ones(4), unlabeled, _ones(100))

    assert estimate.lam == 1.0
    assert estimate.estimate == pytest.approx(0.9)
    assert estimate.variance_rectifier == 0
    assert estimate.variance == pytest.approx(0.0009)
    assert (estimate.low, estimate.high) == pytest.approx((0.9 - Z_95 * 0.03, 0.9 + Z_95 * 0.03))
    assert (estimate.low, estimate.high) == pytest.approx((0.8412, 0.9588), abs=1e-4)
    # humans alone: 2/4 = 0.5; 4 labels weigh like 4·0.25/0.0009 = 1,111
    assert estimate.human_only.estimate == 0.5
    assert estimate.effective_human_labels == pytest.approx(4 * (0.25 / 4) / 0.0009)
    assert estimate.judge_only == pytest.approx(92 / 104)


def test_judge_as_a_coin_gets_lambda_zero_and_the_humans_estimate():
    """Y = 1,1,0,0 and a coin Ŷ = 1,0,1,0: cov(Y, Ŷ) = (.5·.5 + .5·−.5 + −.5·.5 +
    −.5·−.5)/4 = 0, so λ̂ = 0: the estimate is the humans' 2/4 = 0.5 with the
    humans' variance 0.25/4: 0.5 ± 1.96·0.25 = (0.0100, 0.9900)."""
    y = np.array([1.0, 1, 0, 0])
    coin = np.array([1.0, 0, 1, 0])
    unlabeled = np.array([1.0, 0] * 50)

    estimate = ppi_mean(y, coin, _ones(4), unlabeled, _ones(100))

    assert estimate.lam == 0.0
    assert not estimate.judge_helps
    assert estimate.estimate == estimate.human_only.estimate == 0.5
    assert estimate.variance == pytest.approx(0.25 / 4)
    assert (estimate.low, estimate.high) == pytest.approx((0.5 - Z_95 * 0.25, 0.5 + Z_95 * 0.25))
    assert estimate.effective_human_labels == pytest.approx(4.0)


def test_a_random_coin_on_many_answers_barely_moves_lambda():
    """A coin judge on 400 labeled and 4,000 judge-only answers: λ̂ is near 0
    (below the run page's 0.05), the estimate within 0.01 of the humans'."""
    rng = np.random.default_rng(7)
    y = (rng.random(400) < 0.7).astype(float)
    coin, coin_unlabeled = (rng.random(400) < 0.5).astype(float), (rng.random(4000) < 0.5).astype(float)

    estimate = ppi_mean(y, coin, _ones(400), coin_unlabeled, _ones(4000))

    assert estimate.lam < NEGLIGIBLE_LAMBDA
    assert abs(estimate.estimate - y.mean()) < 0.01
    assert estimate.lam == pytest.approx(_ppi_py_lambda(y, coin, coin_unlabeled), abs=1e-9)


def test_judge_always_supported_carries_nothing():
    """Ŷ ≡ 1: the predictions do not vary, so λ·mean(Ŷ_u) − λ·mean(Ŷ) = λ − λ = 0 for
    every λ and the estimate is the humans' 3/4. ppi-python divides 0 by 0 here
    (NaN); Citelab takes λ̂ = 0 and gives the humans' interval
    0.75 ± 1.96·√(0.1875/4)."""
    y = np.array([1.0, 1, 0, 1])
    always = _ones(4)

    estimate = ppi_mean(y, always, _ones(4), _ones(50), _ones(50))
    with pytest.warns(RuntimeWarning, match="invalid value"):
        (reference_low,), _ = ppi_mean_ci(y, always, _ones(50), alpha=0.05)

    assert math.isnan(reference_low)
    assert estimate.lam == 0.0
    assert estimate.estimate == 0.75
    assert estimate.judge_only == 1.0
    half = Z_95 * math.sqrt(0.1875 / 4)
    assert (estimate.low, estimate.high) == pytest.approx((0.75 - half, min(1.0, 0.75 + half)))


def test_several_claims_per_answer_use_per_answer_sums():
    """Labeled answers (human 1s, judge 1s, claims): (2,2,2), (1,2,2), (0,0,1);
    judge-only answers (judge 1s, claims): (1,2), (3,3), (0,1).
    M_l = 5, ȳ = 3/5, ŷ = 4/5; residuals a = 0.8, −0.2, −0.6 and b = 0.4, 0.4, −0.8;
    C = (0.32 − 0.08 + 0.48)/25 = 0.0288. Over all six answers p̄ = 8/11, residuals
    6,6,−8,−5,9,−8 elevenths: Σ² = 306/121, τ² = 306/605. With n = N = 3, M_u = 6:
    λ̂ = 0.0288 / (306/605·(3/25 + 3/36)) = 5227.2/18666 = 0.280039.
    Estimate = λ̂·4/6 + (3 − 4λ̂)/5 = 0.6 − (2/15)λ̂ = 0.562661.
    Rectifier sums 2−2λ̂, 1−2λ̂, 0 over 2,2,1 claims; imputed 1,3,0 over 2,3,1."""
    lam = 5227.2 / 18666
    estimate = ppi_mean([2, 1, 0], [2, 2, 0], [2, 2, 1], [1, 3, 0], [2, 3, 1])

    assert estimate.lam == pytest.approx(lam, rel=1e-12)
    assert estimate.estimate == pytest.approx(0.6 - 2 / 15 * lam, rel=1e-12)
    rectifier = np.array([2 - 2 * lam, 1 - 2 * lam, 0.0])
    r = rectifier.sum() / 5
    v_rectifier = float(np.sum((rectifier - r * np.array([2, 2, 1])) ** 2) / 25)
    v_imputed = lam**2 * ((1 - 4 / 3) ** 2 + (3 - 2) ** 2 + (0 - 2 / 3) ** 2) / 36
    assert estimate.variance == pytest.approx(v_rectifier + v_imputed, rel=1e-12)
    assert (estimate.n_human_units, estimate.n_human_answers, estimate.n_judge_units) == (5, 3, 6)
    assert estimate.human_only.estimate == clustered_ratio([2, 1, 0], [2, 2, 1]).estimate == 0.6


def test_cluster_variance_is_statsmodels_cluster_robust_without_correction():
    """Σ(sᵢ − r·mᵢ)²/M² is the CR0 variance of an intercept-only regression of the
    claims, clustered by answer (statsmodels, use_correction=False)."""
    rng = np.random.default_rng(5)
    units = rng.integers(1, 6, 40)
    groups = np.repeat(np.arange(40), units)
    claims = (rng.random(units.sum()) < 0.6).astype(float)
    sums = np.bincount(groups, weights=claims)

    fit = sm.OLS(claims, np.ones(len(claims))).fit(
        cov_type="cluster", cov_kwds={"groups": groups, "use_correction": False}
    )

    assert cluster_variance(sums, units.astype(float)) == pytest.approx(float(fit.cov_params()[0, 0]), rel=1e-10)


def test_one_claim_answers_give_the_same_figures_as_units():
    """Answers of one claim each are units: the clustered λ̂ reduces to ppi-python's."""
    rng = np.random.default_rng(9)
    y = (rng.random(60) < 0.5).astype(float)
    yhat = _judge(rng, y, 0.1, 0.1)
    unlabeled = (rng.random(300) < 0.5).astype(float)
    assert power_tuning(y, yhat, _ones(60), unlabeled, _ones(300)) == pytest.approx(
        _ppi_py_lambda(y, yhat, unlabeled), abs=1e-12
    )


def test_no_labeled_answer_is_no_estimate_and_one_is_no_interval():
    none = ppi_mean([], [], [], [1, 0], [1, 1])
    one = ppi_mean([1], [1], [2], [1, 0], [1, 1])

    assert (none.estimate, none.low, none.lam, none.n_judge_units) == (None, None, None, 2)
    assert none.judge_only == 0.5
    assert one.estimate is not None and (one.low, one.high) == (None, None)
    assert ppi_answers_needed(one) is None


def test_everything_labeled_leaves_nothing_to_impute():
    """No judge-only answer: λ = 0 and the estimate is the humans' 2/3."""
    estimate = ppi_mean([1, 1, 0], [1, 1, 1], [1, 1, 1], [], [])
    assert (estimate.lam, estimate.estimate, estimate.n_judge_units, estimate.variance_imputed) == (
        0.0, pytest.approx(2 / 3), 0, 0.0)


def test_bad_inputs_are_refused():
    with pytest.raises(ValueError, match="lengths"):
        ppi_mean([1, 0], [1], [1, 1], [], [])
    with pytest.raises(ValueError, match="human sums"):
        ppi_mean([3], [1], [2], [], [])
    with pytest.raises(ValueError, match="judge sums"):
        ppi_mean([1], [1], [2], [1.5], [1])
    with pytest.raises(ValueError, match="confidence"):
        ppi_mean([1], [1], [1], [1], [1], confidence=95)


def test_json_keys_are_the_issues():
    estimate = ppi_mean([2, 1, 0], [2, 2, 0], [2, 2, 1], [1, 3, 0], [2, 3, 1])
    out = estimate.as_dict()
    assert list(out) == [
        "method", "estimate", "ci95", "lambda", "n_human_units", "n_human_answers", "n_judge_units",
        "effective_human_labels", "judge", "human_only", "judge_only",
    ]
    assert out["method"] == "ppi++"
    assert list(out["human_only"]) == ["estimate", "ci95"]
    at_90 = ppi_mean([2, 1, 0], [2, 2, 0], [2, 2, 1], [1, 3, 0], [2, 3, 1], confidence=0.9).as_dict()
    assert "ci95" not in at_90 and at_90["level"] == 0.9 and list(at_90["human_only"]) == ["estimate", "ci"]


def test_budget_keeps_the_imputed_variance():
    """n = 4, V_rectifier = 0.25/4 = 0.0625 (coin judge, λ = 0), V_imputed = 0:
    for h = 0.05, n' = ⌈4·0.0625/(0.05/1.96)²⌉ = ⌈384.15⌉ = 385, 381 more.
    With λ = 1 and V_imputed = 0.0009 (the judge-equals-humans case) h = 0.05 needs
    only n (V_rectifier = 0), h = 0.02 is below the imputed error alone
    (1.96·0.03 = 0.0588 > 0.02): not reachable."""
    coin = ppi_mean([1, 1, 0, 0], [1, 0, 1, 0], [1, 1, 1, 1], [1.0, 0] * 50, [1] * 100)
    budgets = ppi_answers_needed(coin, half_widths=(0.05,))
    assert (budgets[0].needed, budgets[0].more, budgets[0].reachable) == (385, 381, True)

    exact = ppi_mean([1, 0, 1, 0], [1, 0, 1, 0], [1] * 4, [1.0] * 90 + [0.0] * 10, [1] * 100)
    b_wide, b_narrow = ppi_answers_needed(exact, half_widths=(0.06, 0.02), available=104)
    assert (b_wide.needed, b_wide.more, b_wide.reachable) == (4, 0, True)
    assert (b_narrow.reachable, b_narrow.more, b_narrow.needed) == (False, 100, None)


def test_independent_runs_add_variances():
    """A: coin case (0.5, V = 0.0625); B: judge-equals-humans case (0.9, V = 0.0009):
    Δ = 0.4 ± 1.96·√0.0634 = 0.4 ± 0.4935 → (−0.0935, 0.8935); a drop bound of
    0.05 fails the non-inferiority rule (−0.0935 < −0.05), 0.1 passes."""
    a = ppi_mean([1, 1, 0, 0], [1, 0, 1, 0], [1, 1, 1, 1], [1.0, 0] * 50, [1] * 100)
    b = ppi_mean([1, 0, 1, 0], [1, 0, 1, 0], [1] * 4, [1.0] * 90 + [0.0] * 10, [1] * 100)

    difference = independent_difference(a, b)

    spread = Z_95 * math.sqrt(0.0625 + 0.0009)
    assert difference.delta == pytest.approx(0.4)
    assert (difference.low, difference.high) == pytest.approx((0.4 - spread, 0.4 + spread))
    assert difference.low == pytest.approx(-0.0935, abs=1e-4)
    assert non_inferior(difference, 0.05) is False
    assert non_inferior(difference, 0.1) is True
    with pytest.raises(ValueError, match="levels"):
        independent_difference(a, ppi_mean([1, 0], [1, 0], [1, 1], [1], [1], confidence=0.9))


def _population(rng: np.random.Generator, answers: int = 5000):
    """Answers of 1–8 claims (1 + Poisson(2.5), capped), each answer with its own
    support rate drawn from Beta(3, 1.3): claims of one answer move together."""
    units = np.minimum(1 + rng.poisson(2.5, answers), 8)
    rates = rng.beta(3, 1.3, answers)
    answer_of = np.repeat(np.arange(answers), units)
    y = (rng.random(units.sum()) < rates[answer_of]).astype(float)
    return units, answer_of, y


def test_coverage_and_width_by_simulation(capsys):
    """5,000 answers with clustered claims; a judge wrong on 10% of claims,
    asymmetrically (3% of SUPPORTED claims called UNSUPPORTED, 25% of UNSUPPORTED ones SUPPORTED);
    1,000 probability samples of 200 answers. The 95% PPI++ interval covers the
    population's support in ≥ 93% of samples and is narrower than the humans'
    clustered Wilson interval on average (both widths printed)."""
    rng = np.random.default_rng(20231104)
    units, answer_of, y = _population(rng)
    yhat = _judge(rng, y, flip_supported=0.03, flip_unsupported=0.25)
    error_rate = float(np.mean(yhat != y))
    assert 0.09 < error_rate < 0.11
    human_sums = np.bincount(answer_of, weights=y)
    judge_sums = np.bincount(answer_of, weights=yhat)
    truth = y.sum() / units.sum()
    judge_only = yhat.sum() / units.sum()
    assert judge_only - truth > 0.03  # the judge alone is biased: its figure would mislead

    covered_ppi = covered_human = 0
    widths_ppi, widths_human = [], []
    for _ in range(1000):
        sample = np.zeros(len(units), dtype=bool)
        sample[rng.choice(len(units), 200, replace=False)] = True
        estimate = ppi_mean(
            human_sums[sample], judge_sums[sample], units[sample], judge_sums[~sample], units[~sample]
        )
        covered_ppi += estimate.low <= truth <= estimate.high
        covered_human += estimate.human_only.low <= truth <= estimate.human_only.high
        widths_ppi.append(estimate.high - estimate.low)
        widths_human.append(estimate.human_only.high - estimate.human_only.low)

    width_ppi, width_human = float(np.mean(widths_ppi)), float(np.mean(widths_human))
    with capsys.disabled():
        print(
            f"\nPPI++ coverage {covered_ppi / 1000:.3f}, mean width {width_ppi:.4f}; human-only coverage "
            f"{covered_human / 1000:.3f}, mean width {width_human:.4f}; truth {truth:.4f}, judge alone "
            f"{judge_only:.4f}, judge error rate {error_rate:.3f}"
        )
    assert covered_ppi >= 930
    assert width_ppi < width_human
