"""Browser tests of the next claim held ready (marker ``e2e``; issue 24, target 2).

Once a claim is shown, the review page fetches the claim its queue hands out
next (``claim_next``); a label key then shows that claim at once while the save
goes on behind it (static/js/app.js). Each test holds the save's request in the
browser (Playwright's ``route``) to look at the page between the key and the
server's answer, then lets it go (or fails it) and checks the database:

- the next claim is on screen before the save has even reached the server, and
  says it is saving; the claim list and notice follow the acknowledgement;
- the same across an answer boundary (the whole review is held ready);
- a save that fails (503, no connection, 409 conflict) brings the claim back
  with the reason and saves nothing it did not say it saved;
- when another reviewer took the claim held ready meanwhile, the page shows the
  claim the queue does hand out, and says why.
"""

from __future__ import annotations

import pytest

from labeling.models import Label, Reviewer
from labeling.review import label_writes
from tests.e2e.conftest import panel_claim, review_url, wait_for_htmx
from tests.e2e.test_review_keys_e2e import labeling_run
from tests.waiting import BROWSER_WAIT_MS

pytestmark = pytest.mark.e2e

LABEL_POSTS = "**/claims/*/label/"


def held_saves(page) -> list:
    """Route the page's label saves into a list instead of the network: each stays
    pending until the test continues, fulfills or aborts it. Call it before the
    review page is opened: set up on a page already open, the route let a save
    pressed right after it reach the server now and then (1 run in 6 to 15 here,
    seen with the page's own log: the save sent, never held)."""
    held: list = []
    page.route(LABEL_POSTS, lambda route: held.append(route))
    return held


_STATE_JS = """() => {
  const panel = document.getElementById("claim-panel"), status = document.getElementById("key-status");
  const focus = document.activeElement;
  return JSON.stringify({status: status && status.textContent, busy: document.querySelector("main").ariaBusy,
    panel: panel && Object.assign({}, panel.dataset), form: Boolean(document.getElementById("label-form")),
    focus: focus && focus.outerHTML.slice(0, 120)});
}"""


def page_state(page) -> str:
    """What a failure message needs to say why a key did nothing: the key status, the
    page's busy mark, the claim panel's data, the label form and the focused element."""
    return page.evaluate(_STATE_JS)


def wait_until_held(page, held: list) -> object:
    """The save the page sent, once the route holds it (polls with a deadline)."""
    deadline_ms, waited = BROWSER_WAIT_MS, 0
    while not held and waited < deadline_ms:
        page.wait_for_timeout(20)
        waited += 20
    assert held, f"the label save never left the page: {page_state(page)}"
    return held.pop(0)


def press_held(page, held: list, key: str = "1") -> object:
    """Press ``key`` and return the save it sent, held by ``held_saves``' route."""
    page.keyboard.press(key)
    return wait_until_held(page, held)


def open_ready(live_server, page, run, answer, claim_after) -> None:
    """Open ``answer`` and wait until the page holds ``claim_after`` ready."""
    page.goto(live_server.url + review_url(run, answer))
    page.locator(f"#claim-panel[data-ahead='{claim_after.pk}']").wait_for()


def first_label_acknowledged(live_server, page, run, answer, claims) -> None:
    """Open ``answer`` with ``claims[1]`` held ready, press 1 on ``claims[0]`` and wait for
    its acknowledged save, painted."""
    open_ready(live_server, page, run, answer, claims[1])
    page.keyboard.press("1")
    page.locator("#claim-notice", has_text="Saved SUPPORTED on claim 1.").wait_for()
    wait_for_htmx(page, painted=True)


def current_labels(reviewer, claims) -> list[tuple[int, str]]:
    return list(Label.objects.filter(reviewer=reviewer, claim__in=claims, is_current=True)
                .order_by("claim__index").values_list("claim__index", "value"))


def test_the_next_claim_is_shown_while_the_label_saves(live_server, reviewer, logged_in_page):
    page = logged_in_page
    run, [(answer, claims)] = labeling_run(reviewer, {"q1": 3})
    held = held_saves(page)
    open_ready(live_server, page, run, answer, claims[1])

    save = press_held(page, held)
    # Claim 2 is on screen while the save of claim 1 has not reached the server.
    assert panel_claim(page) == claims[1].pk
    assert page.locator("#claim-notice").inner_text() == "Saving SUPPORTED on claim 1…"
    assert page.get_attribute("main", "aria-busy") == "true"
    assert current_labels(reviewer, claims) == []

    save.continue_()
    page.locator("#claim-notice", has_text="Saved SUPPORTED on claim 1.").wait_for()
    wait_for_htmx(page, painted=True)
    assert panel_claim(page) == claims[1].pk
    assert current_labels(reviewer, claims) == [(1, "SUPPORTED")]
    # The acknowledgement brought the claim list and answer text with claim 1 labeled, claim 2 current.
    assert page.locator("#claim-list li", has_text="Fact 1 of q1").get_attribute("class") == "SUPPORTED"
    assert page.locator("#answer-text .claim-mark.current").inner_text() == "2Fact 2 of q1 [1]."
    assert page.url.endswith(f"?claim={claims[1].pk}")
    assert page.locator("#run-progress .metric").inner_text() == "1/3"

    # The claim after it is held ready again: the next key takes the same path.
    page.locator(f"#claim-panel[data-ahead='{claims[2].pk}']").wait_for()
    save = press_held(page, held)
    assert panel_claim(page) == claims[2].pk
    save.continue_()
    page.locator("#claim-notice", has_text="Saved SUPPORTED on claim 2.").wait_for()
    assert current_labels(reviewer, claims) == [(1, "SUPPORTED"), (2, "SUPPORTED")]


def test_the_next_answer_is_shown_while_the_last_label_of_an_answer_saves(live_server, reviewer,
                                                                          logged_in_page):
    page = logged_in_page
    run, [(first, first_claims), (second, second_claims)] = labeling_run(reviewer, {"q1": 1, "q2": 2})
    held = held_saves(page)
    open_ready(live_server, page, run, first, second_claims[0])

    page.keyboard.press("2")
    page.keyboard.type("No span says it.")
    page.keyboard.press("Enter")
    save = wait_until_held(page, held)
    assert panel_claim(page) == second_claims[0].pk
    assert "Fact 1 of q2" in page.locator("#answer-text").inner_text()
    assert page.locator("#claim-notice").inner_text() == "Saving UNSUPPORTED on claim 1…"

    save.continue_()
    page.locator("#claim-notice", has_text="your queue goes on in this answer").wait_for()
    wait_for_htmx(page, painted=True)
    assert page.title().startswith("q2 · r1")
    assert page.locator("#crumb-question").inner_text().strip() == "/ q2"
    assert list(Label.objects.filter(reviewer=reviewer, is_current=True).values_list(
        "claim_id", "value", "justification")) == [(first_claims[0].pk, "UNSUPPORTED", "No span says it.")]


@pytest.mark.parametrize("failure", ["503", "no connection"])
def test_a_failed_save_brings_the_claim_back_with_the_reason(live_server, reviewer, logged_in_page, failure):
    page = logged_in_page
    run, [(answer, claims)] = labeling_run(reviewer, {"q1": 3})
    held = held_saves(page)
    open_ready(live_server, page, run, answer, claims[1])

    save = press_held(page, held)
    assert panel_claim(page) == claims[1].pk
    if failure == "503":
        save.fulfill(status=503, content_type="text/plain; charset=utf-8",
                     body="The database is busy: nothing was saved. Try again.")
        reason = "Not saved: the server answered 503. The database is busy: nothing was saved. Try again."
    else:
        save.abort("connectionrefused")
        reason = "Not saved: the server could not be reached."
    page.locator("#key-status", has_text=reason).wait_for()
    wait_for_htmx(page, painted=True)
    assert panel_claim(page) == claims[0].pk
    assert page.locator("#claim-notice").inner_text() == ""
    assert current_labels(reviewer, claims) == []
    assert page.locator("#run-progress .metric").inner_text() == "0/3"

    # The claim brought back takes the key again, by the usual path (nothing is held ready yet).
    page.unroute(LABEL_POSTS)
    page.keyboard.press("1")
    page.locator("#claim-notice", has_text="Saved SUPPORTED on claim 1.").wait_for()
    assert current_labels(reviewer, claims) == [(1, "SUPPORTED")]


def test_a_conflict_brings_the_claim_back_with_the_newer_label(live_server, reviewer, logged_in_page):
    page = logged_in_page
    run, [(answer, claims)] = labeling_run(reviewer, {"q1": 3})
    held = held_saves(page)
    open_ready(live_server, page, run, answer, claims[1])
    # Another tab of the same reviewer labels claim 1 after this page was rendered.
    label_writes.label_save(claim=claims[0], reviewer=reviewer, value="UNSUPPORTED",
                            justification="Saved in another tab.", base_revision=claims[0].revision, base_label_id=None)

    save = press_held(page, held)
    assert panel_claim(page) == claims[1].pk
    save.continue_()
    page.locator("#label-form .conflict", has_text="Not saved.").wait_for()
    wait_for_htmx(page, painted=True)
    assert panel_claim(page) == claims[0].pk
    assert "Saved in another tab." in page.locator("#label-form .conflict").inner_text()
    assert current_labels(reviewer, claims) == [(1, "UNSUPPORTED")]


def test_a_claim_taken_meanwhile_gives_way_to_the_one_the_queue_hands_out(live_server, reviewer, logged_in_page):
    page = logged_in_page
    run, [(answer, claims)] = labeling_run(reviewer, {"q1": 3})
    held = held_saves(page)
    open_ready(live_server, page, run, answer, claims[1])
    # Overlap 1: once another reviewer labels claim 2, the queue no longer hands it out.
    other = Reviewer.objects.create_user(username="bob", password="pw-for-tests-1")
    run.project.members.add(other)
    label_writes.label_save(claim=claims[1], reviewer=other, value="SUPPORTED", justification="",
                            base_revision=claims[1].revision, base_label_id=None)

    save = press_held(page, held)
    assert panel_claim(page) == claims[1].pk
    save.continue_()
    page.locator("#claim-notice", has_text="no longer the next one in your queue").wait_for()
    wait_for_htmx(page, painted=True)
    assert panel_claim(page) == claims[2].pk
    assert page.locator("#claim-notice").inner_text().startswith("Saved SUPPORTED on claim 1.")
    assert current_labels(reviewer, claims) == [(1, "SUPPORTED")]


def test_the_back_button_shows_the_claim_saved_not_the_one_shown_ahead(live_server, reviewer, logged_in_page):
    # htmx keeps a copy of the page for the back button as the save's answer comes in, when the
    # claim held ready is already on screen: the copy must be of the claim saved, under its URL.
    page = logged_in_page
    run, [(answer, claims)] = labeling_run(reviewer, {"q1": 3})
    first_label_acknowledged(live_server, page, run, answer, claims)

    page.go_back()
    page.locator(f"#claim-panel[data-claim='{claims[0].pk}']").wait_for()
    page.locator("main[aria-busy=true]").wait_for(state="detached")
    assert page.url == live_server.url + review_url(run, answer)
    assert page.locator("#claim-notice").inner_text() == ""
    assert "Saving" not in page.locator("#review").inner_text()
