"""Browser test of the labeling screen: a reviewer
logs in, opens a real ExpertQA run and labels five claims by keyboard only —
one UNSUPPORTED with a justification and one claim split in two first — and
the database and ``score --reviewer`` show exactly those labels.

The imported ExpertQA labels belong to ``expertqa-annotator``; ``alice`` is
another reviewer with no label yet, so her queue starts at the run's first
cited claim.
"""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from django.urls import reverse

from labeling.models import Claim, Label, Run
from labeling.review import queue
from tests.e2e.conftest import panel_claim, wait_for_claim_after, wait_for_htmx

pytestmark = pytest.mark.e2e

RUN = "rr_gs_gpt4"
JUSTIFICATION = "The passage is on topic but never states this."


def claim_text(claim_id: int) -> str:
    return Claim.objects.get(pk=claim_id).text


def test_label_five_claims_by_keyboard(live_server, expertqa_project, reviewer, logged_in_page, tmp_path):
    expertqa_project.members.add(reviewer)
    run = Run.objects.select_related("project").get(project=expertqa_project, name=RUN)
    before = json.loads(score(run, reviewer.username))["claims"]
    page = logged_in_page

    page.goto(live_server.url + run.get_absolute_url())
    page.get_by_role("link", name="Start labeling").click()
    first = panel_claim(page)
    assert first == queue.next_unlabeled_claim(run=run, reviewer=reviewer).pk

    # 1: SUPPORTED, one keystroke, and the next claim of the queue comes in.
    page.keyboard.press("1")
    second = wait_for_claim_after(page, first)
    assert "Saved SUPPORTED" in page.inner_text("#claim-panel .notice")

    # 2: UNSUPPORTED, type why, Enter saves and moves on.
    page.keyboard.press("2")
    page.wait_for_function("document.activeElement && document.activeElement.name === 'justification'")
    page.keyboard.type(JUSTIFICATION)
    page.keyboard.press("Enter")
    third = wait_for_claim_after(page, second)

    # s: split the third claim in two at the word nearest its middle, both parts keep every citation.
    text = claim_text(third)
    cut = text.rfind(" ", 0, len(text) // 2)
    first_part, second_part = text[:cut].strip(), text[cut:].strip()
    page.keyboard.press("s")
    page.wait_for_selector(".split-form")
    page.wait_for_function("document.activeElement && document.activeElement.name === 'first'")
    page.keyboard.press("Control+A")
    page.keyboard.type(first_part)
    page.keyboard.press("Tab")
    page.keyboard.press("Control+A")
    page.keyboard.type(second_part)
    page.keyboard.press("Control+Enter")
    page.wait_for_selector("#claim-panel .notice:has-text('Split claim')")
    wait_for_htmx(page, painted=True)  # keys pressed before the panel is painted are ignored
    assert panel_claim(page) == third  # the first part keeps the claim's id
    page.screenshot(path=str(tmp_path / "after-split.png"))

    # Label both parts and one more claim, SUPPORTED each.
    page.keyboard.press("1")
    split_second = wait_for_claim_after(page, third)
    page.keyboard.press("1")
    fifth = wait_for_claim_after(page, split_second)
    page.keyboard.press("1")
    wait_for_claim_after(page, fifth)
    page.wait_for_function("document.querySelector('#run-progress .metric').innerText.startsWith('5/')")

    # The database holds exactly those five labels of alice.
    labels = {label.claim_id: label for label in Label.objects.filter(reviewer=reviewer)}
    assert sorted(labels) == sorted([first, second, third, split_second, fifth])
    assert all(label.is_current and not label.is_stale for label in labels.values())
    assert {k: v.value for k, v in labels.items()} == {
        first: "SUPPORTED", second: "UNSUPPORTED", third: "SUPPORTED", split_second: "SUPPORTED", fifth: "SUPPORTED"}
    assert labels[second].justification == JUSTIFICATION
    parts = Claim.objects.get(pk=third), Claim.objects.get(pk=split_second)
    assert [(c.text, c.revision, c.index) for c in parts] == [
        (first_part, 2, parts[0].index), (second_part, 1, parts[0].index + 1)]
    assert labels[third].claim_revision == 2
    # The expert's label on the split claim is kept in history, stale.
    assert list(Label.objects.filter(claim_id=third).exclude(reviewer=reviewer)
                .values_list("is_current", "is_stale")) == [(False, True)]

    # ... and so does the score command for alice: one more claim (the split), one more cited claim.
    after = json.loads(score(run, reviewer.username))["claims"]
    assert (after["claims"], after["cited"]) == (before["claims"] + 1, before["cited"] + 1)
    assert (after["labeled_cited"], after["supported"], after["unsupported"]) == (5, 4, 1)
    assert after["pending"] == after["cited"] - 5


def score(run: Run, reviewer: str) -> str:
    out = io.StringIO()
    call_command("score", "--run", run.name, "--project", run.project.slug, "--reviewer", reviewer,
                 "--format", "json", stdout=out)
    return out.getvalue()


def test_shortcuts_do_not_fire_while_typing(live_server, expertqa_project, reviewer, logged_in_page):
    """Typing "1", "j" or "u" in the justification types them; ? opens the help; Esc closes it."""
    expertqa_project.members.add(reviewer)
    run = Run.objects.select_related("project").get(project=expertqa_project, name=RUN)
    page = logged_in_page
    page.goto(live_server.url + reverse("run_next", kwargs={"project_slug": "expertqa", "run_name": RUN}))
    claim = panel_claim(page)

    page.keyboard.press("e")
    page.keyboard.type("1 jku 2")
    assert page.input_value("textarea[name=justification]") == "1 jku 2"
    page.keyboard.press("Escape")
    page.keyboard.press("?")
    assert page.is_visible("#shortcut-help")
    page.keyboard.press("Escape")
    assert not page.is_visible("#shortcut-help")

    assert panel_claim(page) == claim
    assert not Label.objects.filter(reviewer=reviewer).exists()
    assert run.answers.count() == 29
