"""Browser test of reviewer quality (SPEC §4.4 "How it is checked"): a lead writes
guidelines, marks 5 gold claims at rate 50 %; a reviewer labels by keyboard (gets
2 gold claims wrong), sees feedback, falls under the rule; the lead sends one
label back from the claim's history; the reviewer relabels it; the dashboard and
``reviewers --format json`` agree with the figures worked out below.

The run: 5 answers × 2 cited claims. Gold: q01 claim 1 SUPPORTED (the lead's own
label, marked on its review page), and from a file q02·1 SUPPORTED, q03·1
SUPPORTED, q04·1 UNSUPPORTED, q05·1 UNSUPPORTED. Rule: lower bound ≥ 0.7 after
≥ 5 gold claims; feedback on. Ann presses 1 (SUPPORTED) on each of the 10
claims: gold 3/5 (q04·1 and q05·1 wrong), Wilson lower 0.231: below the rule.
After she relabels q04·1 UNSUPPORTED: gold 4/5 = 0.80, Wilson (0.376, 0.964),
lower < 0.7: still below; labels 10, UNSUPPORTED 1/10, no open send-back.

Set ``CITELAB_SCREENSHOTS=DIR`` to keep the screenshots (guidelines page, review
page with the guidelines open on ``g``, dashboard) in DIR.
"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest
from django.core.management import call_command
from django.urls import reverse
from statsmodels.stats.proportion import proportion_confint

from labeling.models import Assignment, GoldClaim, Membership, SendBack
from tests.e2e.conftest import PASSWORD, VIEWPORT, ready_after_navigation, wait_for_claim_after
from tests.factories import (
    AnswerFactory,
    CitationFactory,
    ClaimFactory,
    PassageFactory,
    ProjectFactory,
    QuestionFactory,
    ReviewerFactory,
    RunFactory,
)
from tests.waiting import BROWSER_WAIT_MS

pytestmark = pytest.mark.e2e

GUIDELINES = ("# How we label\n\n**Partial support is UNSUPPORTED.** A claim is SUPPORTED only when a cited "
              "span entails it *as written*.\n\n| claim says | passage says | label |\n|---|---|---|\n"
              "| 1932 | 1932 | SUPPORTED |\n| 1932 | the 1930s | UNSUPPORTED |\n\n<script>alert('x')</script>")
GOLD_FILE = ("question_id,claim_index,label,reason\nq02,1,SUPPORTED,P1 gives the figure.\n"
             "q03,1,SUPPORTED,P1 names the city.\nq04,1,UNSUPPORTED,P1 gives a different year.\n"
             "q05,1,UNSUPPORTED,P1 only says it is likely.\n")


def login(browser, live_server, username):
    context = browser.new_context(viewport=VIEWPORT, bypass_csp=True)
    context.set_default_timeout(BROWSER_WAIT_MS)
    page = context.new_page()
    ready_after_navigation(page)
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(live_server.url + reverse("login"))
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(live_server.url + reverse("project_list"))
    return context, page, errors


def shot(page, tmp_path: Path, name: str) -> None:
    folder = Path(os.environ.get("CITELAB_SCREENSHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(folder / name), full_page=True)


def test_guidelines_gold_feedback_rule_send_back_and_dashboard(live_server, browser, tmp_path):
    project = ProjectFactory(slug="quality", name="Quality")
    run = RunFactory(project=project, name="r1")
    claims = {}
    for a in range(1, 6):
        answer = AnswerFactory(run=run, question=QuestionFactory(project=project, question_id=f"q{a:02d}"),
                               text=f"Fact {a} one. Fact {a} two.")
        passage = PassageFactory(answer=answer, passage_id="P1", position=0, text=f"Passage about fact {a}.")
        for c in (1, 2):
            claims[(a, c)] = CitationFactory(claim=ClaimFactory(answer=answer, index=c, text=f"Fact {a} "
                                                                f"{'one' if c == 1 else 'two'}."),
                                             passage=passage, position=0).claim
    lead_user = ReviewerFactory(username="lea")
    ann_user = ReviewerFactory(username="ann")
    Membership.objects.create(project=project, reviewer=lead_user, role="lead")
    Membership.objects.create(project=project, reviewer=ann_user, role="reviewer")
    Assignment.objects.create(run=run, reviewer=ann_user)

    # The lead writes the guidelines.
    lead_context, lead, lead_errors = login(browser, live_server, "lea")
    lead.goto(live_server.url + reverse("project_guidelines", args=["quality"]))
    lead.fill("#guidelines-source", GUIDELINES)
    lead.get_by_role("button", name="Save as a new version").click()
    assert "Saved the guidelines as version 1" in lead.inner_text(".messages")
    rendered = lead.inner_html("#guidelines-text")
    assert "<strong>Partial support is UNSUPPORTED.</strong>" in rendered and "<td>the 1930s</td>" in rendered
    assert "<script" not in rendered and "&lt;script&gt;" in rendered
    shot(lead, tmp_path, "guidelines.png")

    # Gold: q01·1 from the lead's own label on its review page, four more from a file; rate 50 %, feedback, rule.
    lead.goto(live_server.url + reverse("answer_review", args=["quality", "r1", claims[(1, 1)].answer_id])
              + f"?claim={claims[(1, 1)].pk}")
    lead.keyboard.press("1")
    # The lead works on no queue (ann is the one assigned): the claim stays, saved.
    lead.locator("#claim-panel .notice").filter(has_text="Saved SUPPORTED on claim 1").wait_for()
    lead.click("#lead-tools summary")
    lead.fill("#gold-reason", "P1 states fact 1 word for word.")
    lead.get_by_role("button", name="Save gold label").click()
    assert "is a gold check: SUPPORTED" in lead.inner_text(".messages")
    lead.goto(live_server.url + reverse("run_gold_checks", args=["quality", "r1"]))
    gold_file = tmp_path / "gold.csv"
    gold_file.write_text(GOLD_FILE, encoding="utf-8")
    lead.set_input_files("input[name=file]", str(gold_file))
    lead.get_by_role("button", name="Import").click()
    assert "Marked 4 claims gold from gold.csv" in lead.inner_text(".messages")
    lead.fill("#gold-rate", "50")
    lead.check("input[name=feedback]")
    lead.fill("#min-lower", "0.7")
    lead.fill("#min-gold", "5")
    lead.get_by_role("button", name="Save").click()
    assert "50% of each reviewer's work, feedback on" in lead.inner_text(".messages")
    assert GoldClaim.objects.filter(run=run, is_current=True).count() == 5

    # Ann labels every claim SUPPORTED by keyboard; the guidelines are behind g.
    ann_context, ann, ann_errors = login(browser, live_server, "ann")
    ann.goto(live_server.url + run.get_absolute_url())
    ann.get_by_role("link", name="Start labeling").click()
    ann.locator("main[aria-busy=true]").wait_for(state="detached")
    ann.keyboard.press("g")
    dialog = ann.locator("#guidelines-dialog")
    dialog.wait_for(state="visible")
    assert "Partial support is UNSUPPORTED." in dialog.inner_text() and "version 1" in dialog.inner_text()
    shot(ann, tmp_path, "review-guidelines.png")
    ann.keyboard.press("g")
    dialog.wait_for(state="hidden")
    feedback_seen = []
    claim = int(ann.get_attribute("#claim-panel", "data-claim"))
    for _ in range(10):
        ann.keyboard.press("1")
        if _ == 9:
            ann.locator("#claim-panel .notice").filter(has_text="Saved SUPPORTED").wait_for()
            ann.wait_for_function("!document.querySelector('.htmx-request, .htmx-swapping, .htmx-settling')")
        else:
            claim = wait_for_claim_after(ann, claim)
        if ann.locator("#gold-feedback").count():
            feedback_seen.append(ann.inner_text("#gold-feedback"))
    assert len(feedback_seen) == 5
    wrong = [text for text in feedback_seen if "you said SUPPORTED" in text]
    assert len(wrong) == 2 and any("P1 gives a different year." in text for text in wrong)
    assert sum("you said the same" in text for text in feedback_seen) == 3

    # The lead sees ann under the rule, and sends her q04·1 label back from its history.
    lead.goto(live_server.url + run.get_absolute_url())
    flag = lead.inner_text("#flag-ann")
    assert "below the rule" in flag and "3/5" in flag
    q04 = claims[(4, 1)]
    lead.goto(live_server.url + reverse("answer_review", args=["quality", "r1", q04.answer_id]) + f"?claim={q04.pk}")
    lead.click("details.send-back summary")
    lead.fill("details.send-back textarea[name=comment]", "Compare the year in P1 with the claim's.")
    lead.get_by_role("button", name="Send back for rework").click()
    assert "comes first in their queue" in lead.inner_text(".messages")
    lead.goto(live_server.url + run.get_absolute_url())
    assert lead.inner_text("#open-send-backs") == "1"

    # Ann: the sent-back claim comes first, with the comment; she relabels it UNSUPPORTED.
    ann.goto(live_server.url + run.get_absolute_url())
    ann.get_by_role("link", name="Start labeling").click()
    ann.locator("main[aria-busy=true]").wait_for(state="detached")
    assert int(ann.get_attribute("#claim-panel", "data-claim")) == q04.pk
    assert "Compare the year in P1 with the claim's." in ann.inner_text("#send-back-note")
    ann.keyboard.press("2")
    ann.wait_for_function("document.activeElement && document.activeElement.name === 'justification'")
    ann.keyboard.type("P1 gives another year.")
    ann.keyboard.press("Enter")
    ann.locator("#gold-feedback").filter(has_text="you said the same").wait_for()
    assert SendBack.objects.get().resolution == "relabel"

    # The dashboard and the JSON: gold 4/5, Wilson (0.376, 0.964), still below 0.7.
    low, high = proportion_confint(4, 5, alpha=0.05, method="wilson")
    assert (round(low, 3), round(high, 3)) == (0.376, 0.964)
    lead.goto(live_server.url + reverse("run_dashboard", args=["quality", "r1"]))
    row = lead.inner_text("#reviewer-ann")
    assert "4/5 = 0.80" in row and "(0.38–0.96)" in row and "1/10 = 0.10" in row and "below the rule" in row
    assert lead.inner_text("#open-send-backs") == "0"
    shot(lead, tmp_path, "dashboard.png")
    out = io.StringIO()
    call_command("reviewers", "--run", "r1", "--project", "quality", "--format", "json", stdout=out)
    ann_json = next(r for r in json.loads(out.getvalue())["reviewers"] if r["reviewer"] == "ann")
    assert (ann_json["labels"], ann_json["gold_correct"], ann_json["gold_total"]) == (10, 4, 5)
    assert ann_json["unsupported_share"] == 0.1 and ann_json["send_backs_open"] == 0
    assert ann_json["qualified"] is False
    assert ann_json["gold_accuracy_ci95"] == pytest.approx([low, high], abs=1e-12)
    assert ann_json["median_seconds"] is not None and ann_json["median_seconds"] < 600
    for context in (lead_context, ann_context):
        context.close()
    assert lead_errors == [] and ann_errors == []
