"""The real ExpertQA runs (fixtures/expertqa_dev.jsonl): every run's intervals and the paired
deltas, pinned against an independent computation written here from the fixtures' JSON
with numpy and statsmodels, never through Citelab's code (SPEC §4.5).

Independent route: a pooled ratio is the intercept of an OLS of the unit outcomes (1 for
a SUPPORTED claim, 0 for another labeled cited claim, …) with statsmodels' cluster-robust
variance by answer, whose CR1 factor G/(G−1)·(N−1)/(N−K) is SPEC §4.5's n/(n−1) at K = 1;
n_eff = min(X, R(1−R)/v) and statsmodels' Wilson interval at n_eff. A difference of two
ratios is the coefficient of an indicator, its variance the cluster-robust one by
question (answer, for the gap) times (N−2)/(N−1), the K = 2 factor SPEC §4.5 leaves out.
Per-answer means: statsmodels' Student t interval.

The four runs share no question (fixtures/README.md: every question is answered by one
run), so no paired delta exists between them and ``compare`` refuses each pair. The real
paired deltas are those of ``fixtures/expertqa_judged.jsonl``: six of the same answers,
labeled again by a Citelab engineer (imported as run ``engineer``), against the experts'
runs on the three questions each shares with it.
"""

from __future__ import annotations

import io
import json
import math
from itertools import combinations

import numpy as np
import pytest
import statsmodels.api as sm
from django.core.management import call_command
from django.core.management.base import CommandError
from statsmodels.stats.proportion import proportion_confint
from statsmodels.stats.weightstats import DescrStatsW

from labeling.importers.load import run_import
from tests.conftest import EXPERTQA_PATH, FIXTURES_DIR

Z = 1.959963984540054
RUNS = ["post_hoc_gs_gpt4", "post_hoc_sphere_gpt4", "rr_gs_gpt4", "rr_sphere_gpt4"]


def answers_of(path, run: str | None = None) -> dict[str, list[dict]]:
    """question_id → the answer's factual claims, as {cited, labeled, supported} 0/1 flags."""
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        answer = json.loads(line)
        if run is not None and answer["run"] != run:
            continue
        claims = [c for c in answer["claims"] if c.get("factual") is not False]
        out[answer["question_id"]] = [{
            "cited": int(bool(c["citations"])),
            "labeled": int(bool(c["citations"]) and c.get("label") in ("SUPPORTED", "UNSUPPORTED")),
            "supported": int(bool(c["citations"]) and c.get("label") == "SUPPORTED"),
        } for c in claims]
    return out


# figure → (which claims are units, which units count)
FIGURES = {
    "coverage": (lambda c: True, "cited"),
    "support": (lambda c: c["labeled"], "supported"),
    "supported_rate": (lambda c: True, "supported"),
}


def units(answers: dict[str, list[dict]], figure: str) -> tuple[np.ndarray, np.ndarray]:
    """Unit outcomes and their cluster (question) numbers for one figure."""
    keep, outcome = FIGURES[figure]
    ys, groups = [], []
    for g, question in enumerate(sorted(answers)):
        for claim in answers[question]:
            if keep(claim):
                ys.append(float(claim[outcome]))
                groups.append(g)
    return np.array(ys), np.array(groups)


def wilson_clustered(answers: dict[str, list[dict]], figure: str) -> tuple[float, float, float, float]:
    """(estimate, low, high, n_eff) by OLS + cluster-robust variance + Wilson at n_eff."""
    ys, groups = units(answers, figure)
    fit = sm.OLS(ys, np.ones(len(ys))).fit(cov_type="cluster", cov_kwds={"groups": groups})
    r, v = fit.params[0], fit.bse[0] ** 2
    n_eff = min(len(ys), r * (1 - r) / v) if v > 0 else len(ys)
    low, high = proportion_confint(r * n_eff, n_eff, alpha=0.05, method="wilson")
    return r, low, high, n_eff


def difference(ys: np.ndarray, indicator: np.ndarray, groups: np.ndarray) -> tuple[float, float, float]:
    """Coefficient of ``indicator`` with the SPEC's clustered normal interval."""
    fit = sm.OLS(ys, sm.add_constant(indicator.astype(float))).fit(cov_type="cluster", cov_kwds={"groups": groups})
    half = Z * math.sqrt(fit.bse[1] ** 2 * (len(ys) - 2) / (len(ys) - 1))
    delta = fit.params[1]
    return delta, max(-1.0, delta - half), min(1.0, delta + half)


def gap(answers: dict[str, list[dict]]) -> tuple[float, float, float]:
    """coverage − support of one run: coverage units with indicator 1, support units 0."""
    cov, cov_groups = units(answers, "coverage")
    sup, sup_groups = units(answers, "support")
    return difference(np.concatenate([cov, sup]), np.r_[np.ones(len(cov)), np.zeros(len(sup))],
                      np.concatenate([cov_groups, sup_groups]))


def paired(a: dict, b: dict, figure: str) -> tuple[float, float, float, int]:
    """B − A on the questions both answered: units of both runs, indicator 1 for B, clusters by question."""
    shared = sorted(set(a) & set(b))
    keep, outcome = FIGURES[figure]
    ys, indicator, groups = [], [], []
    for side, answers in ((0, a), (1, b)):
        for g, question in enumerate(shared):
            for claim in answers[question]:
                if keep(claim):
                    ys.append(float(claim[outcome]))
                    indicator.append(side)
                    groups.append(g)
    delta, low, high = difference(np.array(ys), np.array(indicator), np.array(groups))
    return delta, low, high, len(set(groups))


def score_json(*args: str) -> dict:
    out = io.StringIO()
    call_command("score", "--project", "expertqa", *args, "--format", "json", stdout=out, stderr=io.StringIO())
    return json.loads(out.getvalue())


@pytest.fixture
def expertqa(expertqa_project):
    run_import(project=expertqa_project, source=FIXTURES_DIR / "expertqa_judged.jsonl", run_name="engineer")
    return expertqa_project


@pytest.mark.parametrize("run", RUNS)
def test_every_run_figure_matches_the_independent_computation(expertqa, run):
    answers = answers_of(EXPERTQA_PATH, run)
    intervals = score_json("--run", run)["intervals"]
    for figure in FIGURES:
        estimate, low, high, n_eff = wilson_clustered(answers, figure)
        entry = intervals[figure]
        assert entry["estimate"] == pytest.approx(estimate, abs=1e-12)
        assert entry["n_eff"] == pytest.approx(n_eff, rel=1e-9)
        assert entry["ci95"] == pytest.approx([low, high], abs=1e-9)
    assert intervals["gap"]["ci95"] == pytest.approx(list(gap(answers)[1:]), abs=1e-9)
    per_answer_support = [sum(c["supported"] for c in claims) / sum(c["labeled"] for c in claims)
                          for claims in answers.values() if sum(c["labeled"] for c in claims)]
    expected = DescrStatsW(np.array(per_answer_support)).tconfint_mean(alpha=0.05)
    assert intervals["mean_support"]["ci95"] == pytest.approx([max(0.0, expected[0]), min(1.0, expected[1])])


def test_the_issue_figure_post_hoc_gs_support():
    """The issue: 133/175 = 0.76 on 30 answers (29 with a labeled cited claim), 95% interval
    0.64–0.85, the 175 claims weighing like 64."""
    estimate, low, high, n_eff = wilson_clustered(answers_of(EXPERTQA_PATH, "post_hoc_gs_gpt4"), "support")
    assert (round(estimate, 2), round(low, 2), round(high, 2), round(n_eff)) == (0.76, 0.64, 0.85, 64)


@pytest.mark.parametrize("experts", ["rr_gs_gpt4", "rr_sphere_gpt4"])
def test_paired_deltas_of_the_engineer_against_the_experts(expertqa, experts):
    """The engineer (B) against the experts' run (A) on the three questions they share:
    ``compare`` and ``score --baseline`` give the independent paired intervals."""
    a, b = answers_of(EXPERTQA_PATH, experts), answers_of(FIXTURES_DIR / "expertqa_judged.jsonl")
    out = io.StringIO()
    call_command("compare", "--project", "expertqa", "--run", experts, "--run", "engineer", "--format", "json",
                 stdout=out)
    summary = json.loads(out.getvalue())["summary"]
    differences = score_json("--run", "engineer", "--baseline", experts, "--max-drop", "support=1")["differences"]
    for figure in FIGURES:
        delta, low, high, n = paired(a, b, figure)
        for entry in (summary[figure], differences[figure]):
            assert entry["delta"] == pytest.approx(delta, abs=1e-12)
            assert entry["ci95"] == pytest.approx([low, high], abs=1e-9)
            assert entry["n_questions"] == n == 3


def test_the_four_expert_runs_share_no_question_so_no_pair_is_compared(expertqa):
    for a, b in combinations(RUNS, 2):
        assert not set(answers_of(EXPERTQA_PATH, a)) & set(answers_of(EXPERTQA_PATH, b))
        with pytest.raises(CommandError, match="answer no question in common"):
            call_command("compare", "--project", "expertqa", "--run", a, "--run", b, stdout=io.StringIO())
