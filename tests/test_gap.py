"""The gap (coverage − support, SPEC §4.1) is one exact computation: the run
and project pages, ``score`` and the exports show the same number, the float
nearest the difference of the two fractions."""

from __future__ import annotations

import io
import json
from fractions import Fraction

import pandas as pd
import pytest
from django.core.management import call_command
from django.template.defaultfilters import floatformat
from django.urls import reverse

from labeling.models import LabelValue
from labeling.review import tallies
from scoring.claims import claim_metrics
from scoring.deltas import summary_deltas
from scoring.ratio import Ratio, format_value, gap
from tests import factories


def small_ratios(largest: int) -> list[Ratio]:
    """Every count pair ``n/d`` with 1 ≤ d ≤ ``largest`` and 0 ≤ n ≤ d (unreduced: 2/4 and 1/2 both)."""
    return [Ratio(n, d) for d in range(1, largest + 1) for n in range(d + 1)]


def page_gap(coverage: Ratio, support: Ratio) -> float | None:
    """The gap the run and project pages show for these counts."""
    counts = tallies.ClaimCounts(claims=coverage.denominator, cited=coverage.numerator,
                                   supported=support.numerator,
                                   unsupported=support.denominator - support.numerator)
    return counts.gap


def cli_gap(coverage: Ratio, support: Ratio) -> float | None:
    """The gap ``score`` prints for these counts (``claim_metrics``)."""
    return claim_metrics(claims_frame(coverage, support)).gap


def claims_frame(coverage: Ratio, support: Ratio) -> pd.DataFrame:
    """A claims frame of one answer with ``coverage.denominator`` claims,
    ``coverage.numerator`` of them cited, the first ``support.denominator``
    cited ones labeled and ``support.numerator`` of those SUPPORTED."""
    claims, cited = coverage.denominator, coverage.numerator
    labels = ([LabelValue.SUPPORTED.value] * support.numerator
              + [LabelValue.UNSUPPORTED.value] * (support.denominator - support.numerator))
    labels += [None] * (cited - len(labels)) + [LabelValue.UNCITED.value] * (claims - cited)
    return pd.DataFrame({
        "answer_id": [1] * claims, "question_id": ["q"] * claims, "claim_index": list(range(1, claims + 1)),
        "n_citations": [1] * cited + [0] * (claims - cited), "label": pd.Series(labels, dtype=object),
    })


def test_page_gap_equals_the_exact_gap_for_every_small_fraction_pair():
    """All 230 × 230 = 52,900 pairs of count fractions with denominators up to
    20: the page's gap is the float of the exact difference. Subtracting the
    two floats gets 22,258 of them wrong in the last bit, 104 of them in the
    second decimal shown (3/5 − 3/8 = 0.225 showed as 0.22)."""
    ratios = small_ratios(20)
    wrong = [
        (coverage, support) for coverage in ratios for support in ratios
        if page_gap(coverage, support) != float(coverage.fraction - support.fraction)
    ]
    assert len(ratios) == 230
    assert wrong == []


def test_cli_gap_equals_the_page_gap_and_the_exact_gap():
    """Every pair with support's denominator ≤ coverage's numerator (support
    counts labeled cited claims) and denominators up to 8, through the frame
    the CLI scores: 450 pairs."""
    checked = 0
    for coverage in small_ratios(8):
        for support in small_ratios(coverage.numerator):
            exact = float(coverage.fraction - support.fraction)
            assert cli_gap(coverage, support) == page_gap(coverage, support) == gap(coverage, support) == exact, (
                coverage, support)
            checked += 1
    assert checked == 450


def test_cli_exports_and_pages_show_the_same_digits():
    """``format_value`` (CLI, exports, fractions on pages) rounds as the pages'
    ``floatformat`` does, on every small ratio and gap: 1/8 shows 0.13 in both
    (a float format gave 0.12), −3/40 shows −0.08."""
    ratios = small_ratios(20)
    values = {r.value for r in ratios} | {gap(a, b) for a in ratios for b in ratios}
    differ = sorted(v for v in values if format_value(v) != floatformat(v, 2))
    assert len(values) > 5000
    assert differ == []
    assert (format_value(1 / 8), format_value(gap(Ratio(8, 10), Ratio(7, 8)))) == ("0.13", "-0.08")


def test_undefined_gap_is_none_everywhere():
    assert gap(Ratio(0, 0), Ratio(1, 2)) is None
    assert gap(Ratio(1, 2), Ratio(0, 0)) is None
    assert page_gap(Ratio(3, 3), Ratio(0, 0)) is None
    assert cli_gap(Ratio(0, 3), Ratio(0, 0)) is None


def test_comparison_gap_is_the_same_exact_gap():
    """Run comparison: gap of A = 8/10 − 7/8 = −3/40 = −0.075, of B = 5/8 − 2/5
    = 9/40 = 0.225, delta = 12/40 = 0.3 exactly; shown rounded half up as the
    pages round (−0.08 and 0.23)."""
    a = claim_metrics(claims_frame(Ratio(8, 10), Ratio(7, 8)))
    b = claim_metrics(claims_frame(Ratio(5, 8), Ratio(2, 5)))
    rows = {row.key: row for row in summary_deltas(a, b, None, None, fractions={
        "coverage_a": [], "coverage_b": [], "support_a": [], "support_b": []})}

    assert (rows["gap"].a, rows["gap"].b, rows["gap"].delta) == (-0.075, 0.225, 0.3)
    assert (rows["gap"].a_text, rows["gap"].b_text) == ("-0.08", "0.23")


@pytest.mark.django_db
def test_run_page_project_page_and_score_show_the_same_gap(client):
    """8 claims, 5 cited → coverage 5/8 = 0.625; 5 cited claims labeled, 2
    SUPPORTED → support 2/5 = 0.4; gap = 1/8 + 1/10 = 9/40 = 0.225 exactly,
    shown as 0.23 (the float subtraction gave 0.22499999999999998 → 0.22)."""
    reviewer = factories.ReviewerFactory(username="gap-reviewer")
    project = factories.ProjectFactory(slug="gap")
    project.members.add(reviewer)
    run = factories.RunFactory(project=project, name="r")
    answer = factories.AnswerFactory(run=run, question=factories.QuestionFactory(project=project, question_id="q1"))
    for index in range(1, 9):
        claim = factories.ClaimFactory(answer=answer, index=index)
        if index <= 5:
            factories.CitationFactory(claim=claim)
            factories.LabelFactory(claim=claim, reviewer=reviewer,
                         value=LabelValue.SUPPORTED if index <= 2 else LabelValue.UNSUPPORTED,
                         justification="" if index <= 2 else "not in the passage")
    client.force_login(reviewer)

    run_page = client.get(reverse("run_detail", args=["gap", "r"]))
    project_page = client.get(reverse("project_detail", args=["gap"]))
    out = io.StringIO()
    call_command("score", "--run", "r", "--project", "gap", "--format", "json", stdout=out)

    assert run_page.context["counts"].gap == 0.225
    assert '<pclass="stat-valuemetric">0.23</p>' in "".join(run_page.content.decode().split())
    assert '<tdclass="nummetric"data-label="Gap">0.23</td>' in "".join(project_page.content.decode().split())
    assert json.loads(out.getvalue())["claims"]["gap"] == 0.225 == float(Fraction(9, 40))
