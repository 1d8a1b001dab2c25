"""Every run side by side and their unweighted mean (SPEC §4.3b), by hand."""

from __future__ import annotations

import pytest

from scoring.ratio import Ratio
from scoring.summary import RunSummary, mean_row, summary_table


def run(name: str, answers: int, claims: int, coverage: Ratio, support: Ratio, supported: Ratio,
        precision: Ratio, gap: float | None) -> RunSummary:
    return RunSummary(run=name, answers=answers, claims=claims, pending=0, coverage=coverage, support=support,
                      supported_rate=supported, citation_precision=precision, gap=gap)


def test_mean_row_weights_every_run_once():
    """A: 2 answers, 10 claims, supported rate 9/10, precision 9/10; B: 40 answers, 200 claims,
    supported rate 20/200, precision 4/13. The mean is per run, not per claim:
    supported rate (0.9 + 0.1)/2 = 0.5 (pooled over claims it would be 29/210);
    precision (9/10 + 4/13)/2 = 157/260; answers (2 + 40)/2 = 21."""
    a = run("A", 2, 10, Ratio(10, 10), Ratio(9, 10), Ratio(9, 10), Ratio(9, 10), 0.1)
    b = run("B", 40, 200, Ratio(200, 200), Ratio(20, 200), Ratio(20, 200), Ratio(4, 13), 0.9)

    mean = mean_row([a, b])

    assert mean["run"] == "mean of 2 runs"
    assert mean["answers"] == 21.0
    assert mean["supported_rate"] == pytest.approx(0.5)
    assert mean["citation_precision"] == pytest.approx(157 / 260)
    assert mean["gap"] == pytest.approx(0.5)
    assert (mean["supported_rate_runs"], mean["citation_precision_runs"]) == (2, 2)


def test_undefined_values_leave_the_mean_and_are_counted():
    """B judged no citation (0/0): the precision mean is A's alone, over 1 run; the table's
    rows give each fraction as text, the mean row last."""
    a = run("A", 1, 4, Ratio(4, 4), Ratio(3, 4), Ratio(3, 4), Ratio(2, 3), 0.25)
    b = run("B", 1, 2, Ratio(1, 2), Ratio(0, 0), Ratio(0, 2), Ratio(0, 0), None)

    table = summary_table([a, b])

    assert [row["run"] for row in table] == ["A", "B", "mean of 2 runs"]
    assert table[1]["citation_precision"] is None and table[1]["citation_precision_fraction"] == "0/0"
    assert table[0]["supported_rate_fraction"] == "3/4"
    assert table[2]["citation_precision"] == pytest.approx(2 / 3)
    assert table[2]["citation_precision_runs"] == 1
    assert table[2]["support"] == 0.75 and table[2]["gap"] == 0.25


def test_no_runs_gives_nulls():
    mean = mean_row([])
    assert mean["run"] == "mean of 0 runs"
    assert mean["coverage"] is None and mean["coverage_runs"] == 0
