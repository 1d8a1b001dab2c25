"""Every figure shows its interval (SPEC §4.5) on the run page (with its label budget),
the gold panel, the project summary, the review page, the trend chart and the Excel
Summary sheets. Worked by hand; the bounds checked against statsmodels' Wilson."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.urls import reverse
from openpyxl import load_workbook
from statsmodels.stats.proportion import proportion_confint

from labeling.importers.load import run_import
from labeling.models import Answer, Run
from labeling.tables.export import label_table_export
from scoring.ratio import format_value
from tests.conftest import FIXTURES_DIR
from tests.factories import ProjectFactory
from tests.test_score_intervals import answers_file


def shown(low: float, high: float) -> str:
    return f"({format_value(low)}–{format_value(high)})"


@pytest.fixture
def seed(db, reviewer):
    """The seed run: one answer, 5 cited claims, 3 SUPPORTED (labels of seed-reviewer)."""
    project = ProjectFactory(slug="seed")
    project.members.add(reviewer)
    run_import(project=project, source=FIXTURES_DIR / "seed_coverage_support.jsonl")
    return Run.objects.select_related("project").get(project=project)


@pytest.fixture
def pair(db, reviewer):
    """A: q1 2/2 SUPPORTED, q2 1/2 → support 3/4 with residuals 0.5, −0.5:
    v = 2/1 · 0.5/16 = 0.0625, R(1−R)/v = 0.1875/0.0625 = 3 → n_eff 3, Wilson at 3.
    B: q1 1/2, q2 1/2 → support 2/4, residuals 0: n_eff = X = 4, Wilson at 4."""
    project = ProjectFactory(slug="pair")
    project.members.add(reviewer)
    run_import(project=project, source=answers_file("A", {"q1": ["SUPPORTED"] * 2,
                                                          "q2": ["SUPPORTED", "UNSUPPORTED"]}))
    run_import(project=project, source=answers_file("B", {"q1": ["SUPPORTED", "UNSUPPORTED"],
                                                          "q2": ["UNSUPPORTED", "SUPPORTED"]}))
    return project


def test_run_page_shows_each_figure_with_its_interval_and_label_budget(client, seed, reviewer):
    """Support 3/5 on one answer: Wilson at 5 = (0.23, 0.88); half-width 0.3258 → ±0.05 needs
    ⌈1·(0.3258/0.05)²⌉ = 43 answers, ±0.03 118, ±0.02 266: more than the run's one answer.
    The gap of one answer has no interval (it takes two answers)."""
    client.force_login(reviewer)
    html = client.get(seed.get_absolute_url()).content.decode()
    support = shown(*proportion_confint(3, 5, alpha=0.05, method="wilson"))
    assert support == "(0.23–0.88)"
    assert ('<p class="stat-value metric">3/5 = 0.60</p>\n    <p class="stat-ci"><span class="ci" title="95% interval, '
            'answers as clusters: 1 answer, 5 units weigh like 5 independent ones">(0.23–0.88)</span> '
            '<span class="muted small">95% interval</span></p>') in html
    assert ("label budget: ±0.05: about 43 answers · ±0.03: about 118 · ±0.02: about 266 (more than the run "
            "holds: 1)") in html
    gap = '<span class="ci" title="no interval: it takes at least two answers with a unit">(no interval)</span>'
    assert gap in html


def test_run_summary_fragment_of_a_large_run_carries_the_intervals_too(client, seed, reviewer):
    client.force_login(reviewer)
    url = reverse("run_summary", kwargs={"project_slug": "seed", "run_name": seed.name})
    fragment = client.get(url, HTTP_HX_REQUEST="true").content.decode()
    assert "<html" not in fragment and "(0.23–0.88)</span>" in fragment


def test_gold_panel_shows_intervals_beside_pooled_figures_and_means(client, db, reviewer):
    """Seed gold cases: context precision 2/5 over answers 1/1, 0/1, 1/3 (n_eff 5 by the
    cap X, tests/test_score_intervals.py): Wilson(2, 5)."""
    project = ProjectFactory(slug="gold")
    project.members.add(reviewer)
    run_import(project=project, source=FIXTURES_DIR / "seed_gold_references.jsonl")
    client.force_login(reviewer)
    html = client.get(reverse("run_gold", kwargs={"project_slug": "gold", "run_name": "seed-gold-references"}),
                      {"match": "substring"}, HTTP_HX_REQUEST="true").content.decode()
    context = shown(*proportion_confint(2, 5, alpha=0.05, method="wilson"))
    assert "2/5 = 0.40 <span class=\"ci\"" in html and f">{context}</span>" in html


def test_project_summary_shows_every_run_figure_with_its_interval(client, pair, reviewer):
    client.force_login(reviewer)
    html = client.get(reverse("project_summary", kwargs={"project_slug": "pair"})).content.decode()
    a_support = shown(*proportion_confint(0.75 * 3, 3, alpha=0.05, method="wilson"))
    b_support = shown(*proportion_confint(2, 4, alpha=0.05, method="wilson"))
    assert f'3/4 = 0.75 <span class="ci" title="95% interval, answers as clusters: 2 answers, 4 units weigh like 3 ' \
           f'independent ones">{a_support}</span>' in html
    assert f"2/4 = 0.50 <span class=\"ci\" title=\"95% interval, answers as clusters: 2 answers, 4 units weigh " \
           f"like 4 independent ones\">{b_support}</span>" in html


def test_review_page_shows_the_answer_figure_with_its_interval(client, seed, reviewer):
    """The reviewer labeled nothing yet: 0 of 5 factual claims SUPPORTED by their labels;
    one answer, Wilson at 5: (0, z²/(5 + z²)) = (0.00, 0.43)."""
    client.force_login(reviewer)
    answer = Answer.objects.get(run=seed)
    html = client.get(reverse("answer_review", kwargs={"project_slug": "seed", "run_name": seed.name,
                                                       "answer_id": answer.pk})).content.decode()
    assert ('Claims supported by their citations (your labels): <span class="metric">0/5 = 0.00</span> '
            '<span class="ci"') in html
    assert ">(0.00–0.43)</span>" in html


def test_trend_chart_draws_interval_bands(client, pair, reviewer):
    """Two runs: coverage, support and gap each get one band polygon (4 corners) over both runs,
    and the marker tooltips carry the interval."""
    client.force_login(reviewer)
    response = client.get(reverse("project_detail", kwargs={"project_slug": "pair"}))
    html = response.content.decode()
    support = response.context["trend"].series[1]
    assert len(support.bands) == 1 and len(support.bands[0].split()) == 4
    assert html.count('<polygon class="band ') == 3
    b_support = shown(*proportion_confint(2, 4, alpha=0.05, method="wilson"))
    assert f"<title>B: support 0.50 {b_support}</title>" in html


def test_trend_band_of_a_lone_run_is_a_whisker(client, pair, reviewer):
    Run.objects.filter(name="B").delete()
    client.force_login(reviewer)
    trend = client.get(reverse("project_detail", kwargs={"project_slug": "pair"})).context["trend"]
    support = trend.series[1]
    assert support.bands == [] and len(support.whiskers) == 1


def test_label_table_summary_sheet_has_ci_low_and_ci_high(seed):
    out = io.BytesIO()
    label_table_export(run=seed, fmt="xlsx", out=out)
    sheet = load_workbook(io.BytesIO(out.getvalue()))["Summary"]
    rows = list(sheet.iter_rows(values_only=True))
    assert rows[0] == ("item", "value", "fraction", "note", "ci_low", "ci_high")
    support = next(row for row in rows if row[0] == "support (pooled)")
    assert support[4:] == pytest.approx(proportion_confint(3, 5, alpha=0.05, method="wilson"))
    coverage_mean = next(row for row in rows if row[0] == "coverage (per-answer mean)")
    assert coverage_mean[4:] == (None, None)  # one answer: no Student t interval


def test_all_runs_workbook_appends_ci_columns(pair, tmp_path):
    path = tmp_path / "runs.xlsx"
    call_command("score", "--project", "pair", "--all-runs", "--format", "xlsx", "-o", str(path),
                 stderr=io.StringIO())
    rows = list(load_workbook(path)["Runs"].iter_rows(values_only=True))
    header = list(rows[0])
    assert header[:13][-1] == "gap" and header[13:15] == ["coverage ci_low", "coverage ci_high"]
    a = dict(zip(header, rows[1], strict=False))
    assert (a["support ci_low"], a["support ci_high"]) == pytest.approx(
        proportion_confint(0.75 * 3, 3, alpha=0.05, method="wilson"))
