"""``compare`` and the comparison page: each delta with its paired interval and
whether it is distinguishable from noise (SPEC §4.5). Worked by hand on two runs."""

from __future__ import annotations

import io
import json

import openpyxl
import pytest
from django.core.management import call_command
from django.urls import reverse

from labeling.importers.load import run_import
from scoring.intervals import Z_95
from tests.factories import ProjectFactory
from tests.test_score_intervals import answers_file

LOW, HIGH = -0.25 - Z_95 * 0.25, -0.25 + Z_95 * 0.25


@pytest.fixture
def pair(db, reviewer):
    """A: q1 2 of 2 SUPPORTED, q2 1 of 2; B: q1 1 of 2, q2 1 of 2 (the hand example of
    tests/test_score_intervals.py): support 3/4 → 2/4, Δ −0.25 with the paired interval
    −0.25 ± 1.96·0.25 = (−0.74, +0.24). C: q1 and q2 0 of 2 → support 0, Δ −0.75 from A:
    d₁ = 0 − (2 − 1.5)/4 = −0.125, d₂ = 0 − (1 − 1.5)/4 = 0.125 → the same ±0.49, so the
    interval (−1, −0.26) (clipped at −1) lies below 0."""
    project = ProjectFactory(slug="pair")
    project.members.add(reviewer)
    run_import(project=project, source=answers_file("A", {"q1": ["SUPPORTED"] * 2,
                                                          "q2": ["SUPPORTED", "UNSUPPORTED"]}))
    run_import(project=project, source=answers_file("B", {"q1": ["SUPPORTED", "UNSUPPORTED"],
                                                          "q2": ["UNSUPPORTED", "SUPPORTED"]}))
    run_import(project=project, source=answers_file("C", {"q1": ["UNSUPPORTED"] * 2,
                                                          "q2": ["UNSUPPORTED"] * 2}))
    return project


def compare_json(*args: str) -> dict:
    out = io.StringIO()
    call_command("compare", *args, "--project", "pair", "--format", "json", stdout=out)
    return json.loads(out.getvalue())


def test_json_summary_carries_each_delta_with_its_paired_interval(pair):
    support = compare_json("--run", "A", "--run", "B")["summary"]["support"]
    assert (support["a"], support["b"], support["delta"], support["n_questions"]) == (0.75, 0.5, -0.25, 2)
    assert support["ci95"] == pytest.approx([LOW, HIGH])
    assert support["method"] == "paired-clustered"
    at_90 = compare_json("--run", "A", "--run", "B", "--confidence", "0.9")["summary"]["support"]
    assert at_90["level"] == 0.9 and "ci95" not in at_90
    assert at_90["ci"] == pytest.approx([-0.25 - 1.6448536269514722 * 0.25, -0.25 + 1.6448536269514722 * 0.25])


def test_table_says_whether_each_change_is_distinguishable_from_noise(pair):
    out = io.StringIO()
    call_command("compare", "--run", "A", "--run", "C", "--project", "pair", stdout=out)
    support = next(line for line in out.getvalue().splitlines() if line.startswith("Support "))
    assert support.split()[-9:] == ["−0.75", "(−1.00", "to", "−0.26)", "beyond", "noise:", "lower", "in", "B"]
    out = io.StringIO()
    call_command("compare", "--run", "A", "--run", "B", "--project", "pair", stdout=out)
    support = next(line for line in out.getvalue().splitlines() if line.startswith("Support "))
    assert support.endswith("(−0.74 to +0.24)  within noise")


def test_page_shows_the_interval_and_the_verdict_in_words(client, pair, reviewer):
    client.force_login(reviewer)
    html = client.get(reverse("run_compare", kwargs={"project_slug": "pair"}),
                      {"a": "A", "b": "C", "threshold": "0.85"}).content.decode()
    assert "<th class=\"num\">95% interval</th><th>Distinguishable from noise?</th>" in html
    assert ('<td class="num delta worse">−0.75</td><td class="num ci-cell"><span class="ci" title="95% interval of '
            'B − A, paired by question: 2 questions">(−1.00 to −0.26)</span></td>'
            '<td class="noise beyond-noise-lower-in-b">beyond noise: lower in B</td>') in html
    assert "Support −0.75 <span" in html
    within = client.get(reverse("run_compare", kwargs={"project_slug": "pair"}),
                        {"a": "A", "b": "B", "threshold": "0.85"}).content.decode()
    assert '<td class="noise within-noise">within noise</td>' in within


def test_xlsx_summary_lists_ci_low_and_ci_high_below_the_table(pair, tmp_path):
    path = tmp_path / "cmp.xlsx"
    call_command("compare", "--run", "A", "--run", "B", "--project", "pair", "--format", "xlsx", "-o", str(path),
                 stderr=io.StringIO())
    rows = list(openpyxl.load_workbook(path)["Summary"].iter_rows(values_only=True))
    header = rows.index(("metric", "delta (B − A)", "ci_low", "ci_high", "questions", "verdict"))
    support = next(row for row in rows[header:] if row[0] == "Support")
    assert support[1] == -0.25 and support[2:4] == pytest.approx((LOW, HIGH))
    assert support[4:] == (2, "within noise")
