"""What did not fit at 1280 px (SPEC §7, item 11), checked in Chromium on the
demo's data: the every-run summary's last column (Gap) on screen, the project
chart's run names readable whole (the two runs of the demo's comparison no
longer both read "seed-coverage-s…"), and the ``?`` dialog opening at its
title. Screenshots go to pytest's tmp_path."""

from __future__ import annotations

import pytest
from django.urls import reverse

from labeling.importers.load import run_import
from tests.conftest import FIXTURES_DIR
from tests.e2e.conftest import review_url
from tests.factories import ProjectFactory

pytestmark = pytest.mark.e2e

# The demo project's files (labeling/management/commands/demo.py): 8 runs.
DEMO_FILES = ("seed_coverage_support.jsonl", "seed_coverage_support_v2.jsonl", "seed_citation_ids.jsonl",
              "seed_gold_references.jsonl", "expertqa_sample.jsonl")
DEMO_RUNS = ["seed-coverage-support", "seed-coverage-support-v2", "seed-citation-ids", "seed-gold-references",
             "post_hoc_gs_gpt4", "post_hoc_sphere_gpt4", "rr_gs_gpt4", "rr_sphere_gpt4"]

# Each run-name label's drawn lines (its <tspan>s, or its text without the <title>) and its tooltip.
RUN_LABELS = """() => [...document.querySelectorAll('.chart.trend text.run-tick')].map(t => {
  const spans = [...t.querySelectorAll('tspan')].map(s => s.textContent);
  const own = [...t.childNodes].filter(n => n.nodeType === 3).map(n => n.textContent).join('');
  const drawn = spans.length ? spans : [own];
  return [drawn, t.querySelector('title').textContent];
})"""


@pytest.fixture
def demo_project(reviewer):
    """The demo's first project, its 8 runs imported from fixtures/, ``alice`` a member."""
    project = ProjectFactory(slug="demo", name="Demo: seeds and ExpertQA sample")
    project.members.add(reviewer)
    for name in DEMO_FILES:
        run_import(project=project, source=FIXTURES_DIR / name)
    return project


def test_every_run_summary_shows_its_gap_column_at_1280(live_server, demo_project, logged_in_page, tmp_path):
    """At 1280 × 800 the table fits its card: nothing to scroll sideways, and the Gap
    header and the mean row's gap end inside the card (before: 'G' at the edge)."""
    page = logged_in_page
    page.goto(live_server.url + reverse("project_summary", args=["demo"]))
    page.screenshot(path=str(tmp_path / "summary-1280.png"), full_page=True)
    wrap = page.evaluate("(() => { const w = document.querySelector('.table-wrap');"
                         " return [w.scrollWidth, w.clientWidth, w.getBoundingClientRect().right]; })()")
    scroll_width, client_width, right = wrap
    assert scroll_width <= client_width
    gap_header = page.locator("table.summary-table thead th", has_text="Gap").bounding_box()
    assert gap_header["x"] + gap_header["width"] <= right
    mean_gap = page.locator("table.summary-table tfoot td[data-label=Gap]").bounding_box()
    assert mean_gap["x"] + mean_gap["width"] <= right
    assert page.locator("table.summary-table tfoot td[data-label=Gap]").inner_text() == "0.17"


def test_project_chart_writes_run_names_whole(live_server, demo_project, logged_in_page, tmp_path):
    """8 runs (names turned): every name drawn whole, none cut with "…", each the
    tooltip of its label."""
    page = logged_in_page
    page.goto(live_server.url + demo_project.get_absolute_url())
    page.locator(".chart.trend").screenshot(path=str(tmp_path / "trend-8-runs.png"))
    labels = page.evaluate(RUN_LABELS)
    assert [drawn for drawn, _title in labels] == [[name] for name in DEMO_RUNS]
    assert [title for _drawn, title in labels] == DEMO_RUNS


def test_the_demo_comparison_runs_read_apart(live_server, reviewer, logged_in_page, tmp_path):
    """Two runs (names level): wrapped after a '-', the second lines "support" and
    "support-v2" tell them apart; both lines inside the chart."""
    project = ProjectFactory(slug="two")
    project.members.add(reviewer)
    for name in DEMO_FILES[:2]:
        run_import(project=project, source=FIXTURES_DIR / name)
    page = logged_in_page
    page.goto(live_server.url + project.get_absolute_url())
    page.locator(".chart.trend").screenshot(path=str(tmp_path / "trend-2-runs.png"))
    assert page.evaluate(RUN_LABELS) == [[["seed-coverage-", "support"], "seed-coverage-support"],
                                         [["seed-coverage-", "support-v2"], "seed-coverage-support-v2"]]
    svg = page.locator(".chart.trend svg").bounding_box()
    for box in (page.locator(".chart.trend tspan").nth(i).bounding_box() for i in range(4)):
        assert svg["y"] <= box["y"] and box["y"] + box["height"] <= svg["y"] + svg["height"] + 1


def test_help_dialog_opens_at_its_title(live_server, reviewer, logged_in_page, tmp_path):
    """A project judging each citation (the longest help: 18 rows) at 1280 × 800: the
    dialog is taller than the window; ``?`` opens it scrolled to the top, its title
    on screen (before: scrolled down to Close, the title out of sight)."""
    project = ProjectFactory(slug="judged", judge_citations=True)
    project.members.add(reviewer)
    run_import(project=project, source=FIXTURES_DIR / "expertqa_judged.jsonl")
    run = project.runs.order_by("name").first()
    answer = run.answers.order_by("question_key").first()
    page = logged_in_page
    page.goto(live_server.url + review_url(run, answer))
    page.keyboard.press("?")
    dialog = page.locator("#shortcut-help")
    dialog.wait_for(state="visible")
    page.screenshot(path=str(tmp_path / "help-1280x800.png"))
    scroll_top, scroll_height, client_height = page.evaluate(
        "(() => { const d = document.getElementById('shortcut-help'); return [d.scrollTop, d.scrollHeight, "
        "d.clientHeight]; })()")
    assert scroll_height > client_height  # taller than the window: the case that scrolled
    assert scroll_top == 0
    title = page.locator("#shortcut-title").bounding_box()
    box = dialog.bounding_box()
    assert box["y"] <= title["y"] and title["y"] + title["height"] <= box["y"] + box["height"]
    page.keyboard.press("?")
    dialog.wait_for(state="hidden")
