"""Attempts to break the next claim held ready in the browser (marker ``e2e``): the back
button while a save is on its way, a session that ended, markup in claim texts, two tabs,
a lead's send-back, gold feedback, very long answers. Helpers of tests/e2e/test_next_claim_e2e.py
hold the save in the browser to look between the key and the server's answer."""

from __future__ import annotations

import pytest
from django.urls import reverse

from labeling.models import Label
from tests.e2e.conftest import panel_claim, ready_after_navigation, review_url, wait_for_htmx
from tests.e2e.test_next_claim_e2e import (
    LABEL_POSTS,
    current_labels,
    first_label_acknowledged,
    held_saves,
    open_ready,
    press_held,
)
from tests.e2e.test_review_keys_e2e import labeling_run

pytestmark = pytest.mark.e2e


def page_state(page) -> dict:
    """What the page shows: the panel's claim, the claim the claim list marks current, the URL's claim."""
    return page.evaluate("""() => {
        const current = document.querySelector('#claim-list li.current a, #claim-list li.current');
        const href = current && (current.getAttribute('href') || (current.querySelector('a') || {}).href || '');
        return {panel: document.querySelector('#claim-panel').dataset.claim,
                list: (href.match(/claim=(\\d+)/) || [null, null])[1],
                url: (location.search.match(/claim=(\\d+)/) || [null, null])[1],
                notice: (document.querySelector('#claim-notice') || {}).innerText || null};
    }""")


def _on_claim_2_back_mid_save(live_server, reviewer, page, ahead: bool):
    """Claim 1 saved, claim 2 on screen (with claim 3 held ready, or, without ``ahead``, nothing
    held: claim_next refused by the network so the save takes the usual path). 1 on claim 2 is
    held in the browser; the reviewer presses the browser's Back (no key handler sees it) and
    htmx brings back its copy of claim 1. Returns (claims, the held save)."""
    run, [(answer, claims)] = labeling_run(reviewer, {"q1": 4})
    open_ready(live_server, page, run, answer, claims[1])
    page.keyboard.press("1")
    page.locator("#claim-notice", has_text="Saved SUPPORTED on claim 1.").wait_for()
    if ahead:
        page.locator(f"#claim-panel[data-ahead='{claims[2].pk}']").wait_for()
    else:
        page.route("**/claims/*/next/", lambda route: route.abort("connectionrefused"))
        page.keyboard.press("k")
        page.locator(f"#claim-panel[data-claim='{claims[0].pk}']").wait_for()
        wait_for_htmx(page, painted=True)
        page.keyboard.press("j")
        page.locator(f"#claim-panel[data-claim='{claims[1].pk}']").wait_for()
        wait_for_htmx(page, painted=True)
    held = held_saves(page)
    save = press_held(page, held)
    assert panel_claim(page) == (claims[2].pk if ahead else claims[1].pk)
    page.go_back()
    page.wait_for_function(f"document.querySelector('#claim-panel').dataset.claim !== '{claims[2].pk}'")
    return claims, save


def _settled_state(page, wanted: str | None = None) -> dict:
    """page_state once no request is under way, and (with ``wanted``) once #key-status says it
    or 5 s have passed."""
    page.wait_for_function("!document.querySelector('.htmx-request')")
    for _ in range(100):
        if wanted is None or wanted in (page.locator("#key-status").text_content() or ""):
            break
        page.wait_for_timeout(50)
    page.wait_for_timeout(300)  # a late swap would land here: the state must be final
    return {**page_state(page), "status": page.locator("#key-status").text_content()}


@pytest.mark.parametrize("ahead", [True, False], ids=["held-ready", "usual-path"])
def test_back_button_while_a_save_is_on_its_way_then_saved(live_server, reviewer, logged_in_page, ahead):
    """The save then succeeds (acknowledged with the claim held ready). The page must show one
    claim (panel, claim list and URL agree) and say claim 2's label was saved."""
    page = logged_in_page
    claims, save = _on_claim_2_back_mid_save(live_server, reviewer, page, ahead)
    save.continue_()
    state = _settled_state(page)

    assert current_labels(reviewer, claims) == [(1, "SUPPORTED"), (2, "SUPPORTED")]
    # The page gone back to was opened as the answer's page (no ?claim=: its first claim, claim 1).
    assert state["panel"] == state["list"], state
    assert state["url"] == state["panel"] or (state["url"] is None and state["panel"] == str(claims[0].pk)), state
    assert "Saved SUPPORTED on claim 2" in (state["notice"] or "") + (state["status"] or ""), state


@pytest.mark.parametrize("ahead", [True, False], ids=["held-ready", "usual-path"])
def test_back_button_while_a_save_is_on_its_way_then_refused(live_server, reviewer, logged_in_page, ahead):
    """The server then refuses the save (503): nothing saved, and the reviewer is told why
    ("Not saved: the server answered 503 …") on a page whose panel, list and URL agree."""
    page = logged_in_page
    claims, save = _on_claim_2_back_mid_save(live_server, reviewer, page, ahead)
    save.fulfill(status=503, content_type="text/plain; charset=utf-8", body="Busy: nothing was saved.")
    state = _settled_state(page, "Not saved")

    assert current_labels(reviewer, claims) == [(1, "SUPPORTED")]
    assert "Not saved: the server answered 503." in (state["status"] or ""), state
    # The page gone back to was opened as the answer's page (no ?claim=: its first claim, claim 1).
    assert state["panel"] == state["list"], state
    assert state["url"] == state["panel"] or (state["url"] is None and state["panel"] == str(claims[0].pk)), state


def test_a_session_that_ended_never_shows_another_page_as_the_next_claim(live_server, reviewer, logged_in_page):
    """The session ends (logged out in another tab, expired) before the page fetches the claim to
    hold ready: claim_next answers with login_required's redirect, which fetch() follows to a
    full page (here the project list, where the login page sends a signed-in user) with status
    200 and no Citelab-Next-Claim. That page must not be held ready as "the next claim": the
    next key must take the usual path. Simulated by routing claim_next to that redirect."""
    page = logged_in_page
    run, [(answer, claims)] = labeling_run(reviewer, {"q1": 3})
    redirected = []

    def to_login(route):
        redirected.append(route.request.url)
        route.fulfill(status=302, headers={"Location": live_server.url + reverse("login") + "?next=/"})

    page.route("**/claims/*/next/", to_login)
    page.goto(live_server.url + review_url(run, answer))
    deadline = 0
    while not redirected and deadline < 20000:
        page.wait_for_timeout(50)
        deadline += 50
    assert redirected
    page.wait_for_timeout(500)  # the redirected fetch has come back

    ahead = page.get_attribute("#claim-panel", "data-ahead")
    held = held_saves(page)
    save = press_held(page, held)
    shown = {"panel": page.get_attribute("#claim-panel", "data-claim"),
             "notice": page.locator("#claim-notice").inner_text(),
             "sent": save.request.post_data}
    save.continue_()
    page.locator("#claim-notice", has_text="Saved SUPPORTED on claim 1.").wait_for()
    assert ahead is None, f"a page that is no claim was held ready: data-ahead={ahead!r}; while saving: {shown}"


def test_markup_in_claim_and_answer_texts_stays_text_in_the_claim_held_ready(live_server, reviewer,
                                                                           logged_in_page):
    """Claim 2's text and the answer text carry markup and a script: shown ahead (parsed through a
    <template>), it is text, no script runs, and no element of it appears."""
    page = logged_in_page
    run, [(answer, claims)] = labeling_run(reviewer, {"q1": 3})
    evil = "Fact 2 <img src=x onerror=\"window.__pwned=1\"><script>window.__pwned=2</script></template>&amp;"
    type(claims[1]).objects.filter(pk=claims[1].pk).update(text=evil)
    open_ready(live_server, page, run, answer, claims[1])
    held = held_saves(page)

    save = press_held(page, held)
    assert panel_claim(page) == claims[1].pk
    assert page.locator("#claim-panel blockquote.claim-text").inner_text() == evil
    assert page.evaluate("window.__pwned === undefined")
    assert page.locator("#claim-panel img, #claim-panel script").count() == 0
    save.continue_()
    page.locator("#claim-notice", has_text="Saved SUPPORTED on claim 1.").wait_for()
    assert page.evaluate("window.__pwned === undefined")


def test_two_tabs_the_second_save_of_the_same_claim_comes_back_as_a_conflict(live_server, reviewer,
                                                                           logged_in_page):
    """Two tabs of alice on claim 1, each holding claim 2 ready. Tab A saves SUPPORTED (acknowledged);
    tab B then saves UNSUPPORTED on claim 1: it must come back to claim 1 with the conflict, and
    the database keeps tab A's label."""
    tab_a = logged_in_page
    run, [(answer, claims)] = labeling_run(reviewer, {"q1": 3})
    open_ready(live_server, tab_a, run, answer, claims[1])
    tab_b = tab_a.context.new_page()
    ready_after_navigation(tab_b)
    open_ready(live_server, tab_b, run, answer, claims[1])

    tab_a.bring_to_front()
    tab_a.keyboard.press("1")
    tab_a.locator("#claim-notice", has_text="Saved SUPPORTED on claim 1.").wait_for()
    tab_b.bring_to_front()
    tab_b.keyboard.press("2")
    tab_b.keyboard.type("Tab B says no.")
    tab_b.keyboard.press("Enter")
    tab_b.locator("#label-form .conflict", has_text="Not saved.").wait_for()
    wait_for_htmx(tab_b, painted=True)

    assert panel_claim(tab_b) == claims[0].pk
    assert current_labels(reviewer, claims) == [(1, "SUPPORTED")]


def test_a_hung_save_can_be_left(live_server, reviewer, logged_in_page):
    """A save whose answer never comes (the request hangs): the page shows the next claim saying
    it is saving, keys ignored. Nothing acknowledged, nothing claimed saved: the claim shown must
    not read as saved, and the reviewer is told the key was ignored."""
    page = logged_in_page
    run, [(answer, claims)] = labeling_run(reviewer, {"q1": 3})
    open_ready(live_server, page, run, answer, claims[1])
    held = held_saves(page)
    save = press_held(page, held)
    page.keyboard.press("1")
    assert "still being saved" in page.locator("#key-status").inner_text()
    assert "Saved" not in page.locator("#claim-notice").inner_text()
    assert Label.objects.count() == 0
    # End it here (no connection), never at teardown: a request let go while the test database is
    # flushed would lock against the flush.
    save.abort("connectionrefused")
    page.locator("#key-status", has_text="Not saved: the server could not be reached.").wait_for()
    assert panel_claim(page) == claims[0].pk and Label.objects.count() == 0
    page.unroute(LABEL_POSTS)


def test_a_very_long_answer_is_held_ready_and_acknowledged(live_server, reviewer, logged_in_page):
    """An answer of 150 claims (a long text): the claim held ready and its acknowledgement work as
    for a short one, and the claim list marks the right claim current."""
    page = logged_in_page
    run, [(answer, claims)] = labeling_run(reviewer, {"q1": 150})
    first_label_acknowledged(live_server, page, run, answer, claims)
    state = page_state(page)
    assert state["panel"] == state["list"] == state["url"] == str(claims[1].pk), state
