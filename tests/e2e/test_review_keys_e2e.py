"""Browser tests of what a keystroke saves on the review page (marker ``e2e``).

- A save carries exactly the label and the text the reviewer chose last: after
  a conflict with another tab, and after Esc cancels an armed label.
- A key applies to the claim on screen when it was pressed, or is ignored (and
  the page says so): a burst of ``1`` presses 60 ms apart never labels a claim
  the reviewer had not been shown, within an answer or across an answer
  boundary, and every save the page sent exists in the database.
- ``t`` edits the claim's text, ``m`` merges it with the next claim.
"""

from __future__ import annotations

import threading

import pytest

from labeling.models import Claim, Label
from labeling.review import label_writes
from tests.e2e.conftest import panel_claim, ready_after_navigation, review_url, wait_for_claim_after, wait_for_htmx
from tests.factories import (
    AnswerFactory,
    CitationFactory,
    ClaimFactory,
    LabelFactory,
    ProjectFactory,
    QuestionFactory,
    RunFactory,
)
from tests.waiting import BOOT_SECONDS

pytestmark = pytest.mark.e2e

JUSTIFICATION = "The passage gives the date but not the place."


def answer_with_claims(run, question_id: str, count: int):
    """An answer of ``run`` whose text is ``count`` cited claims "Fact k of <question_id> [1]." in a row."""
    sentences = [f"Fact {k} of {question_id} [1]." for k in range(1, count + 1)]
    answer = AnswerFactory(run=run, question=QuestionFactory(project=run.project, question_id=question_id),
                           text=" ".join(sentences))
    claims, start = [], 0
    for index, sentence in enumerate(sentences, start=1):
        claims.append(ClaimFactory(answer=answer, index=index, text=sentence, start=start, end=start + len(sentence)))
        CitationFactory(claim=claims[-1], cited_id="1")
        start += len(sentence) + 1
    return answer, claims


def labeling_run(reviewer, answers: dict[str, int]):
    """Project ``keys``, run ``r1`` with one answer per ``question_id: claim count``.
    Returns (run, [(answer, claims), ...]) in question order."""
    project = ProjectFactory(slug="keys", name="Keys")
    project.members.add(reviewer)
    run = RunFactory(project=project, name="r1")
    return run, [answer_with_claims(run, question_id, count) for question_id, count in answers.items()]


def open_answer(live_server, reviewer, page, claims: int):
    """One answer (question q1) of ``claims`` claims in ``labeling_run``, opened on
    its review page in ``page``. Returns (answer, claims)."""
    run, [(answer, made)] = labeling_run(reviewer, {"q1": claims})
    page.goto(live_server.url + review_url(run, answer))
    return answer, made


def labels_of(reviewer, claim) -> list[tuple[str, str, bool]]:
    """(value, justification, is_current) of the reviewer's labels on ``claim``, oldest first."""
    return list(Label.objects.filter(reviewer=reviewer, claim=claim).order_by("pk")
                .values_list("value", "justification", "is_current"))


def conflict_in_tab_b(live_server, reviewer, page):
    """Tab B opens claim 1; tab A then saves SUPPORTED on it; tab B arms UNSUPPORTED,
    types JUSTIFICATION and presses Enter: "Not saved". Returns (claim 1, tab B)."""
    tab_b = page
    answer, claims = open_answer(live_server, reviewer, tab_b, 2)
    tab_a = page.context.new_page()
    ready_after_navigation(tab_a)
    tab_a.goto(live_server.url + review_url(answer.run, answer))
    tab_a.keyboard.press("1")
    wait_for_claim_after(tab_a, claims[0].pk)
    tab_a.close()
    assert labels_of(reviewer, claims[0]) == [("SUPPORTED", "", True)]

    tab_b.bring_to_front()
    tab_b.keyboard.press("2")
    tab_b.keyboard.type(JUSTIFICATION)
    tab_b.keyboard.press("Enter")
    tab_b.wait_for_selector("#claim-panel .conflict:has-text('Not saved')")
    wait_for_htmx(tab_b)
    assert labels_of(reviewer, claims[0]) == [("SUPPORTED", "", True)]
    return claims[0], tab_b


def escape_then_one(page, claim) -> None:
    """Esc: no label armed and an empty justification box; then ``1`` on ``claim``."""
    page.keyboard.press("Escape")
    assert page.get_attribute("#label-form", "data-armed") is None
    assert page.input_value("textarea[name=justification]") == ""
    page.keyboard.press("1")
    wait_for_claim_after(page, claim.pk)


def test_enter_after_a_conflict_saves_the_label_the_reviewer_chose(live_server, reviewer, logged_in_page):
    """Today's main saved SUPPORTED (the other tab's label) with tab B's justification."""
    claim, tab_b = conflict_in_tab_b(live_server, reviewer, logged_in_page)

    tab_b.keyboard.press("Enter")
    wait_for_claim_after(tab_b, claim.pk)

    assert labels_of(reviewer, claim) == [("SUPPORTED", "", False), ("UNSUPPORTED", JUSTIFICATION, True)]


def test_two_then_enter_after_a_conflict_saves_unsupported_without_typing_2(live_server, reviewer, logged_in_page):
    """Today's main typed "2" into the box (it kept the focus) and Enter then saved SUPPORTED."""
    claim, tab_b = conflict_in_tab_b(live_server, reviewer, logged_in_page)
    # The form came back as the reviewer left it: UNSUPPORTED armed beside their text, and
    # the keyboard free for shortcuts (the box is not focused, so "2" is not typed into it).
    assert tab_b.get_attribute("#label-form", "data-armed") == "UNSUPPORTED"
    assert tab_b.input_value("textarea[name=justification]") == JUSTIFICATION
    assert tab_b.evaluate("document.activeElement.name") != "justification"

    tab_b.keyboard.press("2")
    assert tab_b.evaluate("document.activeElement.name") == "justification"
    assert tab_b.input_value("textarea[name=justification]") == JUSTIFICATION
    tab_b.keyboard.press("Enter")
    wait_for_claim_after(tab_b, claim.pk)

    assert labels_of(reviewer, claim) == [("SUPPORTED", "", False), ("UNSUPPORTED", JUSTIFICATION, True)]


def test_escape_after_a_conflict_keeps_the_newer_label_and_drops_the_text(live_server, reviewer, logged_in_page):
    claim, tab_b = conflict_in_tab_b(live_server, reviewer, logged_in_page)

    escape_then_one(tab_b, claim)

    # SUPPORTED with no text is the label the other tab saved: kept as it is, nothing new.
    assert labels_of(reviewer, claim) == [("SUPPORTED", "", True)]


def test_escape_cancels_the_armed_label_and_its_justification(live_server, reviewer, logged_in_page):
    """2, type "half", Esc, 1: today's main saved SUPPORTED with the justification "half"."""
    page = logged_in_page
    _, claims = open_answer(live_server, reviewer, page, 2)

    page.keyboard.press("2")
    page.keyboard.type("half")
    escape_then_one(page, claims[0])

    assert labels_of(reviewer, claims[0]) == [("SUPPORTED", "", True)]


def test_one_while_unsupported_is_armed_drops_the_text_typed_for_it(live_server, reviewer, logged_in_page):
    """2, type, click outside the box, 1: the text was written for UNSUPPORTED, not for SUPPORTED."""
    page = logged_in_page
    _, claims = open_answer(live_server, reviewer, page, 2)

    page.keyboard.press("2")
    page.keyboard.type("half")
    page.click(".question-text")
    page.keyboard.press("1")
    wait_for_claim_after(page, claims[0].pk)

    assert labels_of(reviewer, claims[0]) == [("SUPPORTED", "", True)]


def test_e_edits_the_justification_of_the_label_you_gave(live_server, reviewer, logged_in_page):
    """e arms the reviewer's own label: Enter saves the new text with it, not another label."""
    run, [(answer, claims)] = labeling_run(reviewer, {"q1": 2})
    LabelFactory(claim=claims[0], reviewer=reviewer, value="UNSUPPORTED", justification="old reason")
    page = logged_in_page
    page.goto(live_server.url + review_url(run, answer, claims[0]))

    page.keyboard.press("e")
    assert page.get_attribute("#label-form", "data-armed") == "UNSUPPORTED"
    page.keyboard.press("Control+A")
    page.keyboard.type("The passage gives no figure.")
    page.keyboard.press("Enter")
    wait_for_claim_after(page, claims[0].pk)

    assert labels_of(reviewer, claims[0]) == [("UNSUPPORTED", "old reason", False),
                                              ("UNSUPPORTED", "The passage gives no figure.", True)]


# Records, in the page, the claim on screen at each keydown and each label save
# htmx sends, with the claim shown at the keydown being handled when it was sent
# (null when it was sent outside a keydown, e.g. replayed later).
RECORDER = """
window.__keys = []; window.__saves = [];
let handling = null;
window.addEventListener('keydown', (event) => {
  const panel = document.getElementById('claim-panel');
  handling = {key: event.key, claim: panel ? panel.dataset.claim : null};
  window.__keys.push(handling);
}, true);
window.addEventListener('keydown', () => { handling = null; });
document.addEventListener('htmx:beforeSend', (event) => {
  const match = /\\/claims\\/(\\d+)\\/label\\//.exec(event.detail.requestConfig.path);
  if (match) { window.__saves.push({claim: match[1], pressedOn: handling && handling.claim}); }
});
"""


def burst(page, presses: int, gap_ms: int) -> tuple[list[dict], list[dict], int]:
    """Press ``1`` ``presses`` times ``gap_ms`` apart, wait until every request is
    answered and swapped in; return (keys, saves, ignored count) as recorded."""
    for n in range(presses):
        page.keyboard.press("1")
        if n + 1 < presses:
            page.wait_for_timeout(gap_ms)
    page.wait_for_load_state("networkidle")
    wait_for_htmx(page)
    ignored = int(page.evaluate("(document.getElementById('key-status') || {dataset: {}}).dataset.ignored || 0"))
    return page.evaluate("window.__keys"), page.evaluate("window.__saves"), ignored


def assert_burst_labels(reviewer, queue: list[Claim], keys, saves, ignored, page):
    """Every save was sent while its key was handled, for the claim on screen; the
    saves are the reviewer's queue from its start with no claim skipped; the
    database holds exactly those labels; every other key was ignored, visibly."""
    assert [key["key"] for key in keys] == ["1"] * 8
    assert 1 <= len(saves) <= 8
    assert all(save["pressedOn"] == save["claim"] for save in saves), saves
    saved = [int(save["claim"]) for save in saves]
    assert saved == [claim.pk for claim in queue[:len(saved)]]
    assert dict(Label.objects.filter(reviewer=reviewer).values_list("claim_id", "value")) == {
        pk: "SUPPORTED" for pk in saved}
    assert ignored == 8 - len(saves)
    if ignored:
        assert "ignored" in page.inner_text("#key-status")
    # The page goes on from the first claim of the queue not saved.
    assert panel_claim(page) == queue[len(saved)].pk


def test_eight_presses_60_ms_apart_label_only_claims_that_were_on_screen(live_server, reviewer, logged_in_page):
    """Today's main queued the presses made while a save was in flight and replayed them
    on the claims that came next (eight presses, eight labels, most never seen)."""
    run, [(answer, claims)] = labeling_run(reviewer, {"q1": 10})
    page = logged_in_page
    page.add_init_script(RECORDER)
    page.goto(live_server.url + review_url(run, answer))
    assert panel_claim(page) == claims[0].pk

    keys, saves, ignored = burst(page, 8, 60)

    assert [key["claim"] for key in keys][0] == str(claims[0].pk)
    assert_burst_labels(reviewer, claims, keys, saves, ignored, page)


def test_a_burst_across_an_answer_boundary_loses_no_acknowledged_save(live_server, reviewer, logged_in_page):
    """Two claims to label in q1, then q2 and q3: the burst crosses into the next
    answer (a whole-review swap) and each save still lands on the claim it was
    pressed on. Today's main replayed queued keys after the swap and lost some."""
    run, answers = labeling_run(reviewer, {"q1": 2, "q2": 3, "q3": 4})
    queue = [claim for _answer, claims in answers for claim in claims]
    page = logged_in_page
    page.add_init_script(RECORDER)
    page.goto(live_server.url + review_url(run, answers[0][0]))

    keys, saves, ignored = burst(page, 8, 60)

    assert_burst_labels(reviewer, queue, keys, saves, ignored, page)


@pytest.mark.parametrize("held_ready", [False, True], ids=["usual path", "next claim held ready"])
def test_keys_pressed_while_saving_are_ignored_not_replayed(live_server, reviewer, logged_in_page, monkeypatch,
                                                            held_ready):
    """With the save held back by the server until three more presses are made, those
    presses are ignored: exactly one label, on the claim shown, and the page says so.
    Either with the next claim held ready (it is on screen, saying it is saving) or
    without (the page cannot fetch it: the pressed button says it is sending)."""
    run, [(answer, claims)] = labeling_run(reviewer, {"q1": 4})
    page = logged_in_page
    page.add_init_script(RECORDER)
    if not held_ready:
        page.route("**/claims/*/next/", lambda route: route.abort())
    page.goto(live_server.url + review_url(run, answer))
    if held_ready:
        page.locator(f"#claim-panel[data-ahead='{claims[1].pk}']").wait_for()
    # The live server answers in a thread of this process: its label_save waits for the test.
    released, save = threading.Event(), label_writes.label_save

    def held_save(**kwargs):
        assert released.wait(timeout=BOOT_SECONDS)
        return save(**kwargs)

    monkeypatch.setattr(label_writes, "label_save", held_save)

    page.keyboard.press("1")
    for _ in range(3):
        page.wait_for_timeout(60)
        page.keyboard.press("1")
    assert "claim 1 is still being saved" in page.inner_text("#key-status")
    if held_ready:
        assert panel_claim(page) == claims[1].pk
        assert page.inner_text("#claim-notice") == "Saving SUPPORTED on claim 1…"
    else:
        assert page.locator("#label-form .label-button.SUPPORTED.sending").count() == 1
    assert not Label.objects.filter(reviewer=reviewer).exists()
    released.set()
    if held_ready:
        page.locator("#claim-notice", has_text="Saved SUPPORTED on claim 1.").wait_for()
        wait_for_htmx(page, painted=True)
    else:
        wait_for_claim_after(page, claims[0].pk)

    assert dict(Label.objects.filter(reviewer=reviewer).values_list("claim_id", "value")) == {
        claims[0].pk: "SUPPORTED"}
    assert page.evaluate("window.__saves") == [{"claim": str(claims[0].pk), "pressedOn": str(claims[0].pk)}]
    assert page.evaluate("document.getElementById('key-status').dataset.ignored") == "3"
    assert panel_claim(page) == claims[1].pk


def test_t_edits_the_claim_text_and_m_merges_with_the_next_claim(live_server, reviewer, logged_in_page):
    page = logged_in_page
    answer, claims = open_answer(live_server, reviewer, page, 3)
    assert "t" in page.inner_text("[data-shortcut='t']")
    assert "m" in page.inner_text("[data-shortcut='m']")

    page.keyboard.press("t")
    page.wait_for_selector(".edit-form")
    page.wait_for_function("document.activeElement && document.activeElement.name === 'text'")
    page.keyboard.press("Control+A")
    page.keyboard.type("Fact 1 of q1 holds [1].")
    page.keyboard.press("Control+Enter")
    page.wait_for_selector("#claim-panel .notice:has-text('reworded')")
    wait_for_htmx(page, painted=True)  # keys pressed before the panel is painted are ignored
    claims[0].refresh_from_db()
    assert (claims[0].text, claims[0].revision) == ("Fact 1 of q1 holds [1].", 2)

    page.once("dialog", lambda dialog: dialog.accept())
    page.keyboard.press("m")
    page.wait_for_selector("#claim-panel .notice:has-text('Merged')")
    assert list(answer.claims.order_by("index").values_list("index", "text")) == [
        (1, "Fact 1 of q1 holds [1]. Fact 2 of q1 [1]."), (2, "Fact 3 of q1 [1].")]


def test_help_lists_the_merge_and_edit_keys(live_server, reviewer, logged_in_page):
    page = logged_in_page
    open_answer(live_server, reviewer, page, 2)
    page.keyboard.press("?")
    help_text = page.inner_text("#shortcut-help")
    assert "t\tedit the claim's text" in help_text
    assert "m\tmerge the claim with the next one" in help_text
