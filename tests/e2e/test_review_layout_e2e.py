"""Browser checks of what a new user found (marker ``e2e``): the review page's
title and breadcrumb follow htmx answer changes, a suggested split keeps both
parts marked in the answer text, the labeling page fits a 390px phone, and the
project page's trend chart keeps every run name inside and fills its card.
"""

from __future__ import annotations

import pytest
from django.urls import reverse

from labeling.models import Claim
from tests.e2e.conftest import PASSWORD, review_url
from tests.factories import (
    AnswerFactory,
    CitationFactory,
    ClaimFactory,
    LabelFactory,
    ProjectFactory,
    QuestionFactory,
    RunFactory,
)
from tests.waiting import BROWSER_WAIT_MS

pytestmark = pytest.mark.e2e

PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 800}


def review_run(reviewer):
    """Project ``demo``, run ``r1``: answer q1 (one cited claim, then an uncited one)
    and answer q2 (two cited claims). Returns (run, answer q1, answer q2)."""
    project = ProjectFactory(slug="demo", name="Demo")
    project.members.add(reviewer)
    run = RunFactory(project=project, name="r1")
    q1 = AnswerFactory(run=run, question=QuestionFactory(project=project, question_id="q1", text="Where is Paris?"),
                       text="Paris is in France [1]. It is old.")
    ClaimFactory(answer=q1, index=1, text="Paris is in France [1].", start=0, end=23)
    CitationFactory(claim=q1.claims.get(index=1), cited_id="1")
    ClaimFactory(answer=q1, index=2, text="It is old.", start=24, end=34)
    q2 = AnswerFactory(run=run, question=QuestionFactory(project=project, question_id="q2", text="Is Lyon big?"),
                       text="Lyon is big [1]. Lyon has a river [1].")
    for index, (start, end) in enumerate(((0, 16), (17, 38)), start=1):
        claim = ClaimFactory(answer=q2, index=index, text=q2.text[start:end], start=start, end=end)
        CitationFactory(claim=claim, cited_id="1")
    return run, q1, q2


def test_answer_change_by_htmx_updates_the_title_and_the_breadcrumb(live_server, reviewer, logged_in_page):
    run, q1, q2 = review_run(reviewer)
    page = logged_in_page
    page.goto(live_server.url + review_url(run, q1))
    assert page.title() == "q1 · r1 · Citelab"
    assert page.inner_text("#crumb-question").strip() == "/ q1"

    # 1 saves SUPPORTED on q1's only cited claim: the queue goes on to q2 through htmx.
    page.keyboard.press("1")
    page.wait_for_function("document.querySelector('.question-text').innerText === 'Is Lyon big?'")
    page.wait_for_function("document.title === 'q2 · r1 · Citelab'")
    assert page.inner_text("#crumb-question").strip() == "/ q2"
    assert page.locator("#crumb-question").count() == 1
    assert "Answer 2 of 2" in page.inner_text(".review-meta")
    assert page.url.startswith(live_server.url + review_url(run, q2))

    # "← Previous answer" swaps the review back: title and breadcrumb follow.
    page.get_by_role("link", name="← Previous answer").click()
    page.wait_for_function("document.title === 'q1 · r1 · Citelab'")
    assert page.inner_text("#crumb-question").strip() == "/ q1"
    assert page.inner_text(".question-text") == "Where is Paris?"


def test_answer_change_without_javascript_loads_the_next_page(live_server, reviewer, browser):
    run, q1, q2 = review_run(reviewer)
    context = browser.new_context(viewport=DESKTOP, java_script_enabled=False)
    context.set_default_timeout(BROWSER_WAIT_MS)
    page = context.new_page()
    page.goto(live_server.url + reverse("login"))
    page.fill("#id_username", reviewer.username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.goto(live_server.url + review_url(run, q1))
    page.get_by_role("link", name="Next answer →").click()
    page.wait_for_url(live_server.url + review_url(run, q2))
    assert page.title() == "q2 · r1 · Citelab"
    assert page.inner_text("#crumb-question").strip() == "/ q2"
    context.close()


def test_suggested_split_keeps_both_parts_marked_in_the_answer(live_server, reviewer, logged_in_page, tmp_path):
    project = ProjectFactory(slug="split")
    project.members.add(reviewer)
    run = RunFactory(project=project, name="r1")
    text = "Intro. Paris is the capital of France and it has two million inhabitants [1]. End."
    answer = AnswerFactory(run=run, question=QuestionFactory(project=project, question_id="q1"), text=text)
    claim_text = "Paris is the capital of France and it has two million inhabitants [1]."
    start = text.index(claim_text)
    claim = ClaimFactory(answer=answer, index=1, text=claim_text, start=start, end=start + len(claim_text))
    CitationFactory(claim=claim, cited_id="1")
    page = logged_in_page
    page.goto(live_server.url + review_url(run, answer))

    page.keyboard.press("s")
    page.wait_for_selector(".split-form")
    assert page.input_value("#split-first") == "Paris is the capital of France"
    assert page.input_value("#split-second") == "and it has two million inhabitants [1]."
    page.keyboard.press("Control+Enter")
    page.wait_for_selector("#claim-panel .notice:has-text('Split claim 1')")

    marks = page.locator("#answer-text .claim-mark")
    assert marks.count() == 2
    assert [mark.inner_text() for mark in marks.all()] == [
        "1Paris is the capital of France", "2and it has two million inhabitants [1]."]
    assert page.locator("#claim-list", has_text="not in text").count() == 0
    parts = list(Claim.objects.filter(answer=answer).order_by("index"))
    assert [text[part.start:part.end] for part in parts] == [part.text for part in parts]
    page.screenshot(path=str(tmp_path / "after-suggested-split.png"), full_page=True)


def test_labeling_page_fits_a_phone(live_server, reviewer, logged_in_page, tmp_path):
    """The new user's "2/4 labeled" stuck out 12px at 390px."""
    project = ProjectFactory(slug="phone")
    project.members.add(reviewer)
    run = RunFactory(project=project, name="rr_sphere_gpt4")
    answer = AnswerFactory(run=run, question=QuestionFactory(project=project, question_id="expertqa:03cecfa2a0a3"),
                           text="One [1]. Two [1]. Three [1]. Four [1].")
    claims = []
    for index, start in enumerate((0, 9, 18, 29), start=1):
        end = answer.text.index("]", start) + 2
        claims.append(ClaimFactory(answer=answer, index=index, text=answer.text[start:end], start=start, end=end))
        CitationFactory(claim=claims[-1], cited_id="1")
    for claim in claims[:2]:
        LabelFactory(claim=claim, reviewer=reviewer)
    page = logged_in_page
    page.set_viewport_size(PHONE)
    page.goto(live_server.url + review_url(run, answer))

    assert page.inner_text("#answer-progress .metric") == "2/4 labeled"
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    box = page.locator("#answer-progress .metric").bounding_box()
    card = page.locator(".answer-card").bounding_box()
    assert box["x"] + box["width"] <= card["x"] + card["width"]
    page.screenshot(path=str(tmp_path / "review-390.png"), full_page=True)


TREND_RUNS = ["seed-coverage-support", "seed-citation-ids", "seed-gold-references", "post_hoc_gs_gpt4",
              "post_hoc_sphere_gpt4", "rr_gs_gpt4", "rr_sphere_gpt4"]

# Each text of the trend SVG whose box reaches outside the SVG's box (1px tolerance for anti-aliasing).
OUTSIDE = """() => {
  const svg = document.querySelector('.chart.trend svg').getBoundingClientRect();
  return [...document.querySelectorAll('.chart.trend svg text')].map(t => [t.textContent, t.getBoundingClientRect()])
    .filter(([, r]) => r.left < svg.left - 1 || r.right > svg.right + 1
                       || r.top < svg.top - 1 || r.bottom > svg.bottom + 1)
    .map(([text]) => text);
}"""


def test_trend_chart_keeps_run_names_inside_and_fills_its_card(live_server, reviewer, logged_in_page, tmp_path):
    project = ProjectFactory(slug="trend")
    project.members.add(reviewer)
    for name in TREND_RUNS:
        answer = AnswerFactory(run=RunFactory(project=project, name=name))
        claim = ClaimFactory(answer=answer, index=1)
        CitationFactory(claim=claim)
        LabelFactory(claim=claim, reviewer=reviewer)
    page = logged_in_page
    page.goto(live_server.url + project.get_absolute_url())

    assert page.locator(".chart.trend text.run-tick").count() == 7
    assert page.evaluate(OUTSIDE) == []
    svg = page.locator(".chart.trend svg").bounding_box()
    card = page.evaluate("(() => { const c = document.querySelector('.chart.trend'); const s = getComputedStyle(c);"
                         " return c.clientWidth - parseFloat(s.paddingLeft) - parseFloat(s.paddingRight); })()")
    assert svg["width"] >= card - 1
    page.screenshot(path=str(tmp_path / "project-1280.png"), full_page=True)

    page.set_viewport_size(PHONE)
    page.goto(live_server.url + project.get_absolute_url())
    assert page.evaluate(OUTSIDE) == []
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    page.screenshot(path=str(tmp_path / "project-390.png"), full_page=True)


# Where the first passage's text ends and the sticky label form begins, in CSS pixels of the viewport.
PASSAGE_AND_FORM = """() => {
  const text = document.querySelector('.passage-text').getBoundingClientRect();
  const form = document.getElementById('label-form').getBoundingClientRect();
  return {top: text.top, bottom: text.bottom, formTop: form.top, formBottom: form.bottom};
}"""


def test_a_typical_passage_is_readable_above_the_label_form_at_1280x800(live_server, expertqa_project, reviewer,
                                                                        logged_in_page, tmp_path):
    """A typical ExpertQA claim with two citations (passages of 971 and 995 characters;
    the fixture's median is 800): its first passage is whole on screen, above the sticky
    label form, without scrolling. On today's main the form (231 px) hid its last 76 px."""
    expertqa_project.members.add(reviewer)
    claim = Claim.objects.select_related("answer__run").get(
        answer__run__project=expertqa_project, answer__run__name="rr_gs_gpt4",
        text__startswith="Pilotis: A grid of slim reinforced concrete pylons")
    assert claim.citations.count() == 2
    page = logged_in_page
    page.goto(live_server.url + review_url(claim.answer.run, claim.answer) + f"?claim={claim.pk}")

    assert page.evaluate("window.scrollY") == 0
    box = page.evaluate(PASSAGE_AND_FORM)
    assert box["top"] >= 0
    assert box["bottom"] <= box["formTop"]
    assert box["formBottom"] <= DESKTOP["height"]
    page.screenshot(path=str(tmp_path / "review-1280x800.png"))
