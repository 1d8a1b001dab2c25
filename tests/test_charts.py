"""SVG pictures: scatter and trend geometry, their partials,
and the run and project pages that include them."""

from __future__ import annotations

import math

import pytest
from django.template.loader import render_to_string
from django.urls import reverse

from labeling.models import Run
from labeling.scores import metrics
from labeling.scores.charts import (
    LABEL_ANGLE,
    TREND_TICK_FONT,
    label_lines,
    run_scatter,
    scatter_chart,
    text_width,
    trend_chart,
)
from tests.counted_run import counted_run

# Scatter geometry (labeling.scores.charts.scatter_chart): plot box x 56..446, y 8..392;
# data inset by 16 units, and by 34 more above support 1 and below support 0
# for the quadrant labels. So x = 72 + 358·coverage, y = 342 − 284·support.


def test_scatter_places_points_by_coverage_and_support():
    """(1.0, 0.6) → x = 72 + 358 = 430, y = 342 − 170.4 = 171.6; (0, 0) → (72, 342)."""
    chart = scatter_chart([
        {"question_id": "q1", "answer_id": 1, "coverage": 1.0, "support": 0.6},
        {"question_id": "q2", "answer_id": 2, "coverage": 0.0, "support": 0.0},
    ], answer_url=lambda answer_id: f"/answers/{answer_id}/")
    assert [(p.cx, p.cy, p.count, p.url) for p in chart.points] == [
        (430.0, 171.6, 1, "/answers/1/"), (72.0, 342.0, 1, "/answers/2/"),
    ]
    assert chart.points[0].title == "1 answer (q1): coverage 1.00, support 0.60"
    assert (chart.split_x, chart.split_y) == (251.0, 200.0)
    assert [t.text for t in chart.x_ticks] == ["0.00", "0.25", "0.50", "0.75", "1.00"]
    assert [t.position for t in chart.y_ticks] == [342.0, 271.0, 200.0, 129.0, 58.0]


def test_scatter_merges_answers_at_the_same_value():
    """Three answers at (1, 1) share one point, radius 4 + 2.2·√2 = 7.11, no single link."""
    rows = [{"question_id": f"q{i}", "answer_id": i, "coverage": 1.0, "support": 1.0} for i in range(3)]
    (point,) = scatter_chart(rows, answer_url=lambda answer_id: f"/a/{answer_id}/").points
    assert (point.count, point.r, point.url) == (3, 7.11, "")
    assert point.title == "3 answers (q0, q1, q2): coverage 1.00, support 1.00"


def test_scatter_lists_answers_with_undefined_ratios_as_not_plotted():
    chart = scatter_chart([
        {"question_id": "empty", "answer_id": 1, "coverage": None, "support": None, "claims": 0},
        {"question_id": "uncited", "answer_id": 2, "coverage": 0.0, "support": None, "cited": 0, "pending": 0},
        {"question_id": "pending", "answer_id": 3, "coverage": 1.0, "support": None, "cited": 2, "pending": 2},
        {"question_id": "ok", "answer_id": 4, "coverage": 0.5, "support": 0.5, "cited": 1, "pending": 0},
    ])
    assert [(n.question_id, n.reason) for n in chart.not_plotted] == [
        ("empty", "no factual claims (empty answer or abstention)"),
        ("uncited", "no cited claim: support undefined"),
        ("pending", "support pending: 2 cited claim(s) unlabeled"),
    ]
    assert (chart.plotted, chart.answers) == (1, 4)


def test_scatter_quadrants_carry_the_seed_patterns():
    quadrants = {q.key: q for q in scatter_chart([]).quadrants}
    high_low = quadrants["high-coverage-low-support"]
    assert (high_low.title, high_low.subtitle) == ("High coverage, low support", "cites everything, verifies nothing")
    assert (high_low.x, high_low.y, high_low.width, high_low.height) == (251.0, 200.0, 195.0, 192.0)
    assert (quadrants["low-coverage-high-support"].title, quadrants["low-coverage-high-support"].subtitle) == (
        "Low coverage, high support", "honest but under-cites")
    assert quadrants["high-coverage-high-support"].subtitle == "good citation hygiene"
    assert quadrants["low-coverage-low-support"].subtitle == "largely ungrounded"


def test_trend_places_runs_in_order_and_breaks_lines_on_undefined_values():
    """Three runs. The lowest value is a gap of −0.13, so the axis starts at −0.25;
    the widest y label "-0.25" is (0.4 + 0.62 + 0.4 + 0.62 + 0.62)·16 = 42.56 units,
    so the plot starts at ceil(6 + 42.56 + 4) = 53 and ends at 960 − 16 = 944.
    The runs sit 24 in from either end: x = 77, 498.5, 920.
    y = 232 − (v + 0.25)/1.25 · 220 (plot 12..232)."""
    chart = trend_chart([
        {"run": "v1", "coverage": 0.5, "support": 1.0, "gap": -0.5 + 0.37},
        {"run": "v2", "coverage": None, "support": 0.75, "gap": None},
        {"run": "v3", "coverage": 1.0, "support": 0.25, "gap": 0.75},
    ])
    coverage, support, gap = chart.series
    assert (chart.plot.left, chart.plot.right, chart.plot.top, chart.plot.bottom) == (53, 944, 12, 232)
    assert [t.position for t in chart.x_ticks] == [77.0, 498.5, 920.0]
    assert [t.text for t in chart.y_ticks] == ["-0.25", "0.00", "0.25", "0.50", "0.75", "1.00"]
    assert chart.zero_y == 188.0
    assert coverage.segments == ["77.0,100.0", "920.0,12.0"]
    assert support.segments == ["77.0,12.0 498.5,56.0 920.0,144.0"]
    assert [m.title for m in gap.markers] == ["v1: gap (coverage − support) -0.13", "v3: gap (coverage − support) 0.75"]


def test_trend_without_negative_values_starts_at_zero_and_wraps_long_names():
    """One run sits in the middle of the plot 47..944 (widest y label "0.00":
    2.26·16 = 36.16 units, ceil(6 + 36.16 + 4) = 47): x = 495.5. Its 27-character
    name is written whole on two lines broken after a '-' (SPEC §7: names cut to
    15 characters made two runs look alike); the second line's baseline is 1.2 em
    (19.2 units) below the first: bottom = 232 + 6 + 12.8 + 19.2 + 4 = 274."""
    chart = trend_chart([{"run": "a-very-long-run-name-indeed", "coverage": 0.5, "support": 0.5, "gap": 0.0}])
    assert chart.zero_y is None
    assert [t.text for t in chart.y_ticks] == ["0.00", "0.25", "0.50", "0.75", "1.00"]
    label = chart.x_ticks[0]
    assert (label.lines, label.full) == (("a-very-long-run-", "name-indeed"), "a-very-long-run-name-indeed")
    assert label.position == 495.5 and label.bottom == 274.0


def test_the_demo_comparison_runs_have_names_that_tell_them_apart():
    """The demo's comparison: "seed-coverage-support" and "seed-coverage-support-v2" were
    both "seed-coverage-s…". Now their second lines differ, and each label's tooltip is
    the whole name."""
    chart = trend_chart([{"run": name, "coverage": 1.0, "support": 0.6, "gap": 0.4}
                         for name in ("seed-coverage-support", "seed-coverage-support-v2")])
    assert [label.lines for label in chart.x_ticks] == [("seed-coverage-", "support"),
                                                        ("seed-coverage-", "support-v2")]
    html = render_to_string("labeling/_runs_trend.html", {"trend": chart})
    assert "<title>seed-coverage-support-v2</title>" in html
    assert '<tspan x="890.08" dy="1.2em">support-v2</tspan>' in html  # moved in: its name needs the room


@pytest.mark.parametrize(("name", "lines"), [
    ("v1", ("v1",)),
    ("post_hoc_gs_gpt4", ("post_hoc_gs_gpt4",)),
    ("a" * 40, ("a" * 18, "a" * 18, "aaaa")),
    ("x" * 70, ("x" * 18, "x" * 18, "x" * 17 + "…")),
    ("experiment number twelve with spaces and more words", ("experiment number", "twelve with", "spaces and more…")),
])
def test_label_lines_break_after_separators_and_cut_only_past_three_lines(name, lines):
    assert label_lines(name) == lines


DEMO_RUNS = ["seed-coverage-support", "seed-citation-ids", "seed-gold-references", "post_hoc_gs_gpt4",
             "post_hoc_sphere_gpt4", "rr_gs_gpt4", "rr_sphere_gpt4"]


def _extent_left(label) -> float:
    """How far the label's text reaches left of its anchor x, by the estimate the chart
    reserves room with: centred text half its width; text turned 35° (ending at x)
    its width · cos 35° plus its ascent (0.8 em) · sin 35°."""
    width = max(text_width(line, TREND_TICK_FONT) for line in label.lines)
    if label.rotate == 0:
        return width / 2
    angle = math.radians(LABEL_ANGLE)
    return width * math.cos(angle) + 0.8 * TREND_TICK_FONT * math.sin(angle)


@pytest.mark.parametrize("names", [
    DEMO_RUNS,                                             # 7 runs: names turned, the first one long
    DEMO_RUNS[:3],                                         # 3 runs: long names level and centred
    ["v1", "seed-coverage-support"],                       # a short name first, a long one last
    [f"experiment-number-{i:02d}" for i in range(13)],     # 13 runs: every 2nd name shown
    ["a" * 40],
])
def test_trend_run_names_stay_inside_the_chart(names):
    """The new user saw "ed-coverage-s…": the first name began left of the chart.
    Every name now starts at x − extent ≥ 0, ends inside the width, above the
    bottom, and the runs stay in order inside the plot."""
    chart = trend_chart([{"run": name, "coverage": 0.5, "support": 0.5, "gap": 0.0} for name in names])
    assert chart.x_ticks
    for label in chart.x_ticks:
        assert label.x - _extent_left(label) >= 0, label
        assert round(label.x - _extent_left(label), 2) == pytest.approx(label.left, abs=0.02)
        assert label.right <= chart.width
        assert label.bottom <= chart.height
        assert chart.plot.left <= label.position <= chart.plot.right
    positions = [m.x for m in chart.series[0].markers]
    assert positions == sorted(positions) and len(positions) == len(names)
    assert chart.rotate_labels == (len(names) > 4)


def test_trend_turned_names_of_the_demo_project():
    """Seven runs: the first name "seed-coverage-support", whole (18 plain characters,
    3 narrow "-", "-", "t": (18·0.62 + 3·0.4)·16 = 197.76 units) turned 35° reaches
    197.76·cos 35° + 12.8·sin 35° = 162.00 + 7.34 = 169.34 left of its anchor. The
    anchor sits 4 right of the run and the text keeps a margin of 4 from the
    edge, so the first run moves in to x = 4 + 169.34 − 4 = 169.34 (left 4.0)."""
    chart = trend_chart([{"run": name, "coverage": 0.5, "support": 0.5, "gap": 0.0} for name in DEMO_RUNS])
    first = chart.x_ticks[0]
    assert (first.text, first.rotate, first.anchor) == ("seed-coverage-support", -35, "end")
    assert text_width(first.text) == pytest.approx(197.76)
    assert first.position == pytest.approx(169.34, abs=0.01)
    assert first.left == pytest.approx(4.0, abs=0.01)
    assert chart.x_ticks[-1].position == 920.0


def test_partials_escape_every_label():
    evil = "<script>alert(1)</script>"
    scatter = scatter_chart([
        {"question_id": evil, "answer_id": 1, "coverage": 1.0, "support": 0.5},
        {"question_id": evil, "answer_id": 2, "coverage": None, "support": None},
    ], caption=evil)
    html = render_to_string("labeling/_scatter.html", {"chart": scatter})
    trend = render_to_string("labeling/_runs_trend.html", {
        "trend": trend_chart([{"run": evil, "coverage": 1.0, "support": 0.5, "gap": 0.5}])})
    for text in (html, trend):
        assert "<script>" not in text
        assert "&lt;script&gt;" in text
    assert "1 answer not plotted" in html
    assert 'cx="430.0" cy="200.0"' in html


@pytest.mark.django_db
def test_run_scatter_of_real_answers_matches_the_readme(expertqa_project, django_assert_max_num_queries):
    """rr_gs_gpt4 (``fixtures/README.md``): 29 answers, per-answer mean
    support 0.8092 over the answers whose support is defined."""
    run = Run.objects.select_related("project").get(project=expertqa_project, name="rr_gs_gpt4")
    # claims version, answers, questions with gold, claims, claims not factual, the run's label state,
    # labels and their reviewers, adjudications
    with django_assert_max_num_queries(9):
        chart = run_scatter(run)
    assert chart.answers == 29
    assert chart.plotted + len(chart.not_plotted) == 29
    mean_support = sum(p.support * p.count for p in chart.points) / chart.plotted
    assert round(mean_support, 4) == 0.8092


@pytest.mark.django_db
def test_run_and_project_pages_show_the_pictures(client, expertqa_project, reviewer):
    expertqa_project.members.add(reviewer)
    client.force_login(reviewer)
    run_page = client.get(reverse("run_detail", kwargs={"project_slug": "expertqa", "run_name": "rr_gs_gpt4"}))
    assert 'class="chart scatter"' in run_page.content.decode()
    assert "cites everything, verifies nothing" in run_page.content.decode()
    project_page = client.get(reverse("project_detail", kwargs={"project_slug": "expertqa"})).content.decode()
    assert 'class="chart trend"' in project_page
    # four runs, three series, one marker per run and series
    assert project_page.count("<circle") == 12


@pytest.mark.django_db
def test_run_scatter_query_count(django_assert_num_queries):
    """tests/counted_run.py's run: coverage 2/3 on every answer; support 1 on q01 and q03 (one
    point), 0 on q02 (claim 1 adjudicated UNSUPPORTED, claim 2 disputed)."""
    world = counted_run()
    # The claims version, the answers and the questions with gold (answers_frame, handed to
    # resolved_claims_frame), the claims, those not factual, the run's label state, the labels and their
    # reviewers (frames.current_labels), the adjudications.
    with django_assert_num_queries(9):
        chart = run_scatter(world.run)
    assert (chart.answers, [point.count for point in chart.points]) == (3, [2, 1])
    # The answers and claims read once per claims version (labeling.exports.structure).
    with django_assert_num_queries(6):
        assert run_scatter(world.run) == chart
    scored = metrics.run_scores(world.run, with_gold=False).claims
    with django_assert_num_queries(0):
        run_scatter(world.run, metrics=scored)
