"""Browser test of a team on one run: a lead sets overlap 2 and assigns two
reviewers; each labels the same claims blind, checking they cannot see the
other's label; the lead adjudicates their one disagreement by keyboard; the
run's score, run page and agreement page show the verdict."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from django.urls import reverse

from labeling.models import Adjudication, Label, Membership
from tests.e2e.conftest import PASSWORD, VIEWPORT, ready_after_navigation
from tests.factories import CitationFactory, ClaimFactory, ProjectFactory, ReviewerFactory, RunFactory
from tests.waiting import BROWSER_WAIT_MS

pytestmark = pytest.mark.e2e

ANN_SAYS = "The passage names another year entirely."
LEAD_SAYS = "The span gives the year exactly; Ann misread it."


def login(browser, live_server, username):
    # Playwright's wait_for_function needs eval, which the app's policy forbids (tests/e2e/conftest.py).
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


def wait_for_claim_after(page, claim_id: str) -> str:
    page.wait_for_function(f"document.querySelector('#claim-panel').dataset.claim !== '{claim_id}'")
    page.wait_for_function("!document.querySelector('.htmx-request, .htmx-swapping, .htmx-settling')")
    return page.get_attribute("#claim-panel", "data-claim")


def test_overlap_blind_labels_and_keyboard_adjudication(live_server, browser, tmp_path):
    project = ProjectFactory(slug="team", name="Team")
    run = RunFactory(project=project, name="r1")
    first = CitationFactory(claim=ClaimFactory(answer__run=run, index=1, text="The bridge opened in 1932."),
                            passage__text="The bridge opened to traffic in 1932 after six years of work.").claim
    CitationFactory(claim=ClaimFactory(answer=first.answer, index=2, text="It took six years to build."),
                    passage__text="Construction lasted six years.")
    for name, role in (("lea", "lead"), ("ann", "reviewer"), ("bob", "reviewer")):
        Membership.objects.create(project=project, reviewer=ReviewerFactory(username=name), role=role)

    # The lead: overlap 2, ann and bob assigned.
    lead_context, lead, lead_errors = login(browser, live_server, "lea")
    lead.goto(live_server.url + run.get_absolute_url())
    lead.get_by_role("link", name="Assign and set overlap…").click()
    lead.select_option("#overlap", "2")
    lead.check("input[name=assigned][value=ann]")
    lead.check("input[name=assigned][value=bob]")
    lead.get_by_role("button", name="Save").click()
    assert "needs 2 reviewers; labeling is blind; working on it: ann, bob" in lead.inner_text(".messages")
    lead.screenshot(path=str(tmp_path / "reviewers.png"), full_page=True)

    # ann: claim 1 UNSUPPORTED with a reason, claim 2 SUPPORTED.
    ann_context, ann, ann_errors = login(browser, live_server, "ann")
    ann.goto(live_server.url + run.get_absolute_url())
    ann.get_by_role("link", name="Start labeling").click()
    claim = ann.get_attribute("#claim-panel", "data-claim")
    assert claim == str(first.pk)
    ann.keyboard.press("2")
    ann.wait_for_function("document.activeElement && document.activeElement.name === 'justification'")
    ann.keyboard.type(ANN_SAYS)
    ann.keyboard.press("Enter")
    claim = wait_for_claim_after(ann, claim)
    ann.keyboard.press("1")
    ann.wait_for_function("document.querySelector('#claim-panel .notice') !== null")

    # bob, on the same claims, sees nothing of ann's label before (or after) giving his own.
    bob_context, bob, bob_errors = login(browser, live_server, "bob")
    bob.goto(live_server.url + run.get_absolute_url())
    bob.get_by_role("link", name="Start labeling").click()
    claim = bob.get_attribute("#claim-panel", "data-claim")
    assert claim == str(first.pk)
    assert ANN_SAYS not in bob.content()
    assert "ann" not in bob.inner_text(".history")
    assert "yours only: blind labeling" in bob.inner_text(".history")
    bob.keyboard.press("1")
    claim = wait_for_claim_after(bob, claim)
    bob.keyboard.press("1")
    bob.wait_for_function("document.querySelector('#claim-panel .notice') !== null")
    # His run figures rest on his own labels: support 2/2 (all labels would make claim 1 disputed: 1/1).
    bob.goto(live_server.url + run.get_absolute_url())
    assert "2/2" in bob.inner_text("#run-summary")

    # ann cannot see bob's label either.
    ann.goto(live_server.url + reverse("answer_review", args=["team", "r1", first.answer_id]) + f"?claim={first.pk}")
    assert "bob" not in ann.inner_text(".history")
    assert Label.objects.filter(is_current=True).count() == 4

    # The lead adjudicates the one disagreement by keyboard: 1, the reason, Enter.
    lead.goto(live_server.url + reverse("run_adjudicate", args=["team", "r1"]))
    assert "1 disputed claim" in lead.inner_text(".dispute-list")
    assert ANN_SAYS in lead.inner_text("#verdict-ann")
    assert "SUPPORTED" in lead.inner_text("#verdict-bob")
    lead.screenshot(path=str(tmp_path / "adjudicate.png"), full_page=True)
    lead.keyboard.press("1")
    lead.wait_for_function("document.activeElement && document.activeElement.id === 'reason'")
    lead.keyboard.type(LEAD_SAYS)
    lead.keyboard.press("Enter")
    lead.wait_for_selector("text=No disputed claims in this run")
    verdict = Adjudication.objects.get(is_current=True)
    assert (verdict.claim_id, verdict.value, verdict.reason, verdict.lead.username) == (
        first.pk, "SUPPORTED", LEAD_SAYS, "lea")

    # The run's score counts it: both claims SUPPORTED (one agreed, one adjudicated), nothing pending.
    out = io.StringIO()
    call_command("score", "--run", "r1", "--project", "team", "--format", "json", stdout=out)
    claims = json.loads(out.getvalue())["claims"]
    assert (claims["supported"], claims["pending"], claims["disputed"], claims["adjudicated"]) == (2, 0, 0, 1)
    lead.goto(live_server.url + run.get_absolute_url())
    assert "2/2" in lead.inner_text("#run-summary")
    assert "1 adjudicated" in lead.inner_text(".run-reviewers")
    lead.screenshot(path=str(tmp_path / "run.png"), full_page=True)
    # The agreement page, reached from the run page, shows the verdict beside the two sides.
    lead.click("a.button:has-text('Reviewer agreement')")
    lead.wait_for_selector("#adjudicated-count")
    assert "1 of 1 disputed claim adjudicated" in lead.inner_text("#adjudicated-count")
    settled = lead.inner_text(f"#claim-{first.pk} .verdict-cell")
    assert "SUPPORTED" in settled and LEAD_SAYS in settled and "by lea" in settled
    lead.screenshot(path=str(tmp_path / "agreement.png"), full_page=True)
    lead.goto(live_server.url + reverse("project_members", args=["team"]))
    assert lead.inner_text("#member-ann").startswith("ann")
    lead.screenshot(path=str(tmp_path / "members.png"), full_page=True)
    for context in (lead_context, ann_context, bob_context):
        context.close()
    assert lead_errors == ann_errors == bob_errors == []
