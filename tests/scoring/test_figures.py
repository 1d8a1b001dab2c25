"""Every figure of a run with its interval, and paired run differences (SPEC §4.5,
``scoring.figures``): small runs worked by hand, and the paired difference checked
against statsmodels' cluster-robust regression."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from statsmodels.stats.proportion import proportion_confint

from scoring.citation_ids import abstention_metrics, citation_id_metrics
from scoring.claims import claim_metrics
from scoring.figures import (
    MORE_THAN_THE_RUN_HOLDS,
    budget_text,
    interval_text,
    interval_title,
    paired_differences,
    run_figures,
    run_intervals,
)
from scoring.intervals import Z_95, clustered_ratio, mean_interval, paired_difference
from scoring.judgments import citation_judgments


def claims_frame(answers: dict[str, list[str | None]]) -> pd.DataFrame:
    """One row per claim: ``{question_id: [label, …]}``; UNCITED claims have no citation,
    every other claim one (``None`` = pending)."""
    rows = []
    for question, labels in answers.items():
        for index, label in enumerate(labels):
            rows.append({"answer_id": f"a-{question}", "question_id": question, "claim_index": index,
                         "n_citations": 0 if label == "UNCITED" else 1, "label": label})
    return pd.DataFrame(rows)


RUN = {
    "q1": ["SUPPORTED", "SUPPORTED", "UNSUPPORTED", "UNCITED"],
    "q2": ["SUPPORTED", None],
    "q3": ["UNCITED"],
}


def test_claim_units_are_the_per_answer_counts():
    """q1: 4 claims, 3 cited, 3 labeled, 2 SUPPORTED; q2: 2 claims, 2 cited, 1 labeled (1 pending),
    1 SUPPORTED; q3: 1 claim, uncited. Support's budget cap: 2 answers have a cited claim."""
    units = claim_metrics(claims_frame(RUN)).units()
    assert units["coverage"].question_ids == ("q1", "q2", "q3")
    assert (units["coverage"].numerators, units["coverage"].denominators) == ((3, 2, 0), (4, 2, 1))
    assert (units["support"].numerators, units["support"].denominators) == ((2, 1, 0), (3, 1, 0))
    assert units["support"].available == 2
    assert (units["supported_rate"].numerators, units["supported_rate"].denominators) == ((2, 1, 0), (4, 2, 1))


def test_run_intervals_by_hand():
    """support = 3/4 over 2 answers (2/3, 1/1): R = 0.75, residuals 2 − 2.25 = −0.25 and 0.25,
    v = 2/1 · 0.125/16 = 0.015625, R(1−R)/v = 0.1875/0.015625 = 12 → n_eff = min(4, 12) = 4,
    Wilson at m = 4. Coverage 5/7 over 3 answers: residuals 3 − 20/7, 2 − 10/7, 0 − 5/7.
    Per-answer support: 2/3 and 1 → mean 5/6 with a t interval on 2 values."""
    entries = run_intervals(run_figures(claims=claim_metrics(claims_frame(RUN))))
    support = entries["support"].as_dict()
    assert support["estimate"] == 0.75 and (support["n_answers"], support["n_units"]) == (2, 4)
    assert support["n_eff"] == pytest.approx(4.0)
    assert support["ci95"] == pytest.approx(list(proportion_confint(3, 4, alpha=0.05, method="wilson")))
    assert support["method"] == "wilson-clustered"
    residuals = np.array([3 - 4 * 5 / 7, 2 - 2 * 5 / 7, -5 / 7])
    v = 3 / 2 * (residuals**2).sum() / 49
    assert entries["coverage"].interval.n_eff == pytest.approx(min(7, (5 / 7) * (2 / 7) / v))
    assert entries["mean_support"].interval == mean_interval([2 / 3, 1.0, None])
    assert list(entries) == ["coverage", "support", "gap", "supported_rate", "mean_coverage", "mean_support",
                             "mean_supported_rate"]


def test_label_budget_shape_and_cap():
    """Support's interval rests on 2 answers and the run holds 2 answers with a cited claim:
    any narrower half-width needs more answers than the run holds."""
    entry = run_intervals(run_figures(claims=claim_metrics(claims_frame(RUN))))["support"]
    shown = entry.as_dict()
    w = entry.interval.half_width
    assert shown["answers_needed"] == {f"{h:.2f}": math.ceil(2 * (w / h) ** 2) for h in (0.05, 0.03, 0.02)}
    assert shown["more_answers_for"] == dict.fromkeys(("0.05", "0.03", "0.02"), MORE_THAN_THE_RUN_HOLDS)
    assert entry.budget_text.endswith("(more than the run holds: 2)")


def test_zero_denominators_give_null_entries():
    """A run whose only cited claim is pending: support 0/0 has no estimate, no interval, no budget."""
    entries = run_intervals(run_figures(claims=claim_metrics(claims_frame({"q1": [None, "UNCITED"]}))))
    assert entries["support"].as_dict() == {
        "estimate": None, "ci95": None, "n_answers": 0, "n_units": 0, "n_eff": None,
        "method": "wilson-clustered", "more_answers_for": None, "answers_needed": None,
    }
    assert entries["gap"].interval.estimate is None and entries["mean_support"].interval.estimate is None


def test_other_levels_key_the_interval_ci_with_its_level():
    entries = run_intervals(run_figures(claims=claim_metrics(claims_frame(RUN))), confidence=0.9)
    shown = entries["support"].as_dict()
    assert "ci95" not in shown and shown["level"] == 0.9
    assert shown["ci"] == pytest.approx(list(proportion_confint(3, 4, alpha=0.1, method="wilson")))


def test_judged_ids_and_abstention_figures_come_from_their_sections():
    """Judged precision: citations c1 FULL (q1), c2 NONE (q1), c3 PARTIAL on a SUPPORTED claim
    (q2, precise under union) → units (1/2, 1/1). Ids: q1 cites P1, gold P1 P2 → tp 1, fp 0,
    fn 1; q2 cites P3, gold P4 → tp 0, fp 1, fn 1. Abstention: q3 unanswerable, cites nothing."""
    claims = pd.DataFrame({"claim_id": [1, 2, 3], "answer_id": ["a1", "a1", "a2"], "question_id": ["q1", "q1", "q2"],
                           "label": ["SUPPORTED", "UNSUPPORTED", "SUPPORTED"]})
    judgments = pd.DataFrame({"citation_id": ["c1", "c2", "c3"], "claim_id": [1, 2, 3],
                              "judgment": ["FULL", "NONE", "PARTIAL"]})
    answers = pd.DataFrame({"answer_id": ["a1", "a2", "a3"], "question_id": ["q1", "q2", "q3"],
                            "has_gold": [True, True, True], "answerable": [True, True, False]})
    citations = pd.DataFrame({"answer_id": ["a1", "a2"], "passage_id": ["P1", "P3"], "fabricated": [False, True]})
    gold = pd.DataFrame({"answer_id": ["a1", "a1", "a2"], "passage_id": ["P1", "P2", "P4"]})
    metrics = claim_metrics(claims.assign(claim_index=0, n_citations=1))
    figures = run_figures(claims=metrics, judgments=citation_judgments(claims, judgments),
                          citation_ids=citation_id_metrics(answers, citations, gold),
                          abstention=abstention_metrics(answers, citations))
    units = figures.units
    assert (units["judged_precision"].numerators, units["judged_precision"].denominators) == ((1, 1), (2, 1))
    assert (units["precision"].numerators, units["precision"].denominators) == ((1, 0, 0), (1, 1, 0))
    assert (units["recall"].numerators, units["recall"].denominators) == ((1, 0, 0), (2, 1, 0))
    assert (units["fabricated_rate"].numerators, units["fabricated_rate"].denominators) == ((0, 1, 0), (1, 1, 0))
    assert (units["abstention"].numerators, units["abstention"].denominators) == ((0, 0, 1), (0, 0, 1))
    entries = run_intervals(figures)
    assert entries["judged_precision"].interval == clustered_ratio([1, 1], [2, 1])
    assert entries["abstention"].interval.n_eff == 1.0  # one unanswerable answer: Wilson at m = 1


def test_paired_differences_equal_a_cluster_robust_regression():
    """B − A of support on shared questions is the coefficient of a run indicator in an OLS of
    the claim outcomes, its variance statsmodels' cluster-robust one by question without the
    (N − 1)/(N − K) factor (SPEC §4.5 keeps only n/(n − 1))."""
    rng = np.random.default_rng(5)
    questions = [f"q{i:02d}" for i in range(30)]
    runs = {}
    for name, rate in (("a", 0.7), ("b", 0.6)):
        answers = {}
        for question in questions:
            size = int(rng.integers(1, 6))
            answers[question] = ["SUPPORTED" if rng.random() < rate else "UNSUPPORTED" for _ in range(size)]
        runs[name] = answers
    a = run_figures(claims=claim_metrics(claims_frame(runs["a"])))
    b = run_figures(claims=claim_metrics(claims_frame(runs["b"])))
    difference = paired_differences(a, b, keys=["support"])["support"]

    outcome, indicator, groups = [], [], []
    for side, answers in enumerate((runs["a"], runs["b"])):
        for g, question in enumerate(questions):
            for label in answers[question]:
                outcome.append(1.0 if label == "SUPPORTED" else 0.0)
                indicator.append(side)
                groups.append(g)
    design = sm.add_constant(np.array(indicator, dtype=float))
    fit = sm.OLS(np.array(outcome), design).fit(cov_type="cluster", cov_kwds={"groups": np.array(groups)})
    n_units = len(outcome)
    variance = fit.bse[1] ** 2 * (n_units - 2) / (n_units - 1)
    assert difference.delta == pytest.approx(fit.params[1], abs=1e-12)
    assert difference.low == pytest.approx(fit.params[1] - Z_95 * math.sqrt(variance), rel=1e-9)
    assert difference.high == pytest.approx(fit.params[1] + Z_95 * math.sqrt(variance), rel=1e-9)
    assert difference.n_questions == len(set(groups))


def test_paired_differences_cover_the_gap_and_means_of_shared_questions():
    """A: q1 2/2 SUPPORTED; q2 1 of 2. B: q1 1 of 2; q2 1 of 2; q3 (only B) left out.
    Support A = 3/4, B = 2/4 → Δ −0.25 and the interval of the core's hand example;
    coverage is 1 in both (Δ 0), so the gap moves by +0.25."""
    a = run_figures(claims=claim_metrics(claims_frame({"q1": ["SUPPORTED"] * 2,
                                                        "q2": ["SUPPORTED", "UNSUPPORTED"]})))
    b = run_figures(claims=claim_metrics(claims_frame({"q1": ["SUPPORTED", "UNSUPPORTED"],
                                                        "q2": ["UNSUPPORTED", "SUPPORTED"],
                                                        "q3": ["SUPPORTED"]})))
    differences = paired_differences(a, b)
    assert differences["support"] == paired_difference([2, 1], [2, 2], [1, 1], [2, 2])
    assert differences["gap"].delta == pytest.approx(0.25)
    assert (differences["gap"].low, differences["gap"].high) == pytest.approx((0.25 - Z_95 * 0.25, 0.25 + Z_95 * 0.25))
    assert differences["mean_support"].a == 0.75 and differences["mean_support"].b == 0.5
    assert list(differences)[:4] == ["coverage", "support", "gap", "supported_rate"]


def test_interval_text_and_title():
    interval = clustered_ratio([133], [175])
    assert interval_text(interval) == "(0.69–0.82)"
    assert interval_title(interval) == ("95% interval, answers as clusters: 1 answer, 175 units weigh like 175 "
                                        "independent ones")
    difference = paired_difference([1, 2], [2, 2], [0, 2], [2, 2])
    assert interval_text(difference) == "(−0.74 to +0.24)"
    assert interval_text(mean_interval([0.5])) == "(no interval)"
    assert interval_text(clustered_ratio([0], [0])) == ""
    assert budget_text(None) == ""
