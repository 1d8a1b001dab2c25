"""Attempts to break the next claim held ready (labeling.views.review.claim_next and the
acknowledged save of ``_after_label``) on the server side: what ``claim_next`` holds ready
must be what the save's queue then hands out whenever nothing else changed, or the page
flips from the claim shown to another one, and a hidden gold check (SPEC §4.4) is told by
that flip. The browser side is tests/e2e/test_next_claim_break_e2e.py."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from labeling.models import ClaimLease, GoldClaim, GoldSource
from labeling.review import queue
from tests.quality_data import quality_world
from tests.review_site import HX, panel_claim

pytestmark = pytest.mark.django_db


def _gold(world, claims):
    for claim in claims:
        GoldClaim.objects.create(run=world.run, claim=claim, value="SUPPORTED", reason="P1 says so.",
                                 source=GoldSource.FILE, lead=world.lead, claim_revision=claim.revision)


def _url(world, name, claim):
    return reverse(name, args=[world.project.slug, world.run.name, claim.pk])


def _page_walk(client, world, first, limit=40):
    """Label SUPPORTED everything the queue hands out, as the page does with the next claim
    held ready: fetch claim_next after each claim shown, then save naming it. Returns
    [(claim saved, claim held ready, claim the page shows after the save, acknowledged)]."""
    steps, current = [], first
    by_pk = {c.pk: c for c in world.claims}
    for _ in range(limit):
        ahead = client.get(_url(world, "claim_next", current), **HX)
        ahead_pk = int(ahead["Citelab-Next-Claim"]) if ahead.status_code == 200 else None
        data = {"value": "SUPPORTED", "justification": "", "claim": current.pk, "revision": current.revision,
                "base_label": ""}
        if ahead_pk is not None:
            data.update(prefetched=ahead_pk, prefetched_state=ahead["Citelab-Next-State"])
        response = client.post(_url(world, "claim_label", current), data, **HX)
        assert response.status_code == 200, response.content.decode()[:500]
        acked = response.get("Citelab-Ack") == str(current.pk)
        html = response.content.decode()
        shown = ahead_pk if acked else (panel_claim(html) if 'id="claim-panel"' in html else None)
        steps.append((current.pk, ahead_pk, shown, acked))
        if shown is None or shown == current.pk:
            return steps
        current = by_pk[shown]
    raise AssertionError("the queue never ran out")


def _first(client, world):
    """The claim "Start labeling" hands out (leased), as run_next does."""
    reviewer = world.reviewers[0]
    client.force_login(reviewer)
    return queue.next_unlabeled_claim(run=world.run, reviewer=reviewer, lease=True)


def test_a_lone_reviewer_with_gold_checks_has_every_save_acknowledged(client):
    """One reviewer, nobody else at work, no edit: the claim held ready is always the claim the
    queue then hands out, so every save is acknowledged. With gold checks due at rate 0.5 the
    held-ready claim is computed with one label too few (claim_next asks priority_claim before
    the claim shown carries its label): after each gold check it holds another gold claim ready
    (priority_claim still finds a check "due", the check shown being unlabeled), and the save
    before a check holds the ordinary claim ready. The page then flips from the claim shown to
    another with "no longer the next one in your queue" exactly around gold checks: what tells a
    lone reviewer which claims are checks (SPEC §4.4: nothing may tell a check from another claim)."""
    world = quality_world(answers=5, claims_per_answer=2, reviewers=1)
    world.run.gold_rate = 0.5
    world.run.save()
    gold_ids = {world.claims[i].pk for i in (1, 4, 6, 9)}
    _gold(world, [world.claims[i] for i in (1, 4, 6, 9)])
    first = _first(client, world)

    steps = _page_walk(client, world, first)

    assert {saved for saved, *_ in steps} == {c.pk for c in world.claims}
    refused = [(saved in gold_ids, ahead in gold_ids, shown in gold_ids)
               for saved, ahead, shown, acked in steps if not acked and ahead is not None]
    assert refused == [], (f"{len(refused)} of {len(steps)} saves not acknowledged; (saved is gold, held ready "
                           f"is gold, shown is gold) for each: {refused}")


def _save_held(client, world, claim):
    """claim_next after ``claim``, then the save of ``claim`` naming it: (held ready, response)."""
    held = client.get(_url(world, "claim_next", claim), **HX)
    response = client.post(_url(world, "claim_label", claim), {
        "value": "SUPPORTED", "justification": "", "claim": claim.pk, "revision": claim.revision,
        "base_label": "", "prefetched": held["Citelab-Next-Claim"],
        "prefetched_state": held["Citelab-Next-State"]}, **HX)
    return int(held["Citelab-Next-Claim"]), response


def test_on_a_gold_check_the_claim_held_ready_is_the_one_the_queue_hands_out(client, monkeypatch):
    """Every offset 0 (gold check k due once k < 0.5 · (labels + 1)): the first hand-out is a
    check (0 < 0.5), the one after it is not (1 < 1.0 fails), the third is again (1 < 1.5).
    claim_next asks the queue before the claim shown carries its label, so on check 1.2 it
    holds the other gold claim 3.2 ready (a check still looks due), and on ordinary claim 1.1
    it holds 2.1 ready where the queue then hands out check 3.2. Each time the page shows one
    claim, then flips to another: the flip marks gold checks."""
    monkeypatch.setattr(queue, "gold_offset", lambda run_id, reviewer_id, k: 0.0)
    world = quality_world(answers=3, claims_per_answer=2, reviewers=1)
    world.run.gold_rate = 0.5
    world.run.save()
    c11, c12, c21, c22, c31, c32 = world.claims
    _gold(world, [c12, c32])
    reviewer = world.reviewers[0]
    check = _first(client, world)
    assert check.pk in (c12.pk, c32.pk)  # a gold check comes first

    held, response = _save_held(client, world, check)
    handed_out = ClaimLease.objects.get(reviewer=reviewer, run=world.run).claim_id
    steps = [(check.text, world.claims[[c.pk for c in world.claims].index(held)].text,
              world.claims[[c.pk for c in world.claims].index(handed_out)].text)]
    ordinary = next(c for c in world.claims if c.pk == handed_out)
    held2, response2 = _save_held(client, world, ordinary)
    handed_out2 = ClaimLease.objects.get(reviewer=reviewer, run=world.run).claim_id
    steps.append((ordinary.text, world.claims[[c.pk for c in world.claims].index(held2)].text,
                  world.claims[[c.pk for c in world.claims].index(handed_out2)].text))

    # (saved, held ready, handed out): the held-ready claim must be the one handed out.
    assert [(saved, held_text) for saved, held_text, _ in steps] == [(saved, out) for saved, _, out in steps], steps
    assert response.get("Citelab-Ack") == str(check.pk) and response2.get("Citelab-Ack") == str(ordinary.pk)


# -- leases, send-backs, gold feedback and viewers with the claim held ready --------------------------

def _save_ahead(client, world, claim, ahead_pk, base_label="", state=None):
    """Save ``claim`` naming ``ahead_pk`` as shown, with ``state`` (else the one ``claim_next`` gives now)."""
    if state is None:
        held = client.get(_url(world, "claim_next", claim))
        state = held["Citelab-Next-State"] if held.status_code == 200 else ""
    return client.post(_url(world, "claim_label", claim), {
        "value": "SUPPORTED", "justification": "", "claim": claim.pk, "revision": claim.revision,
        "base_label": base_label, "prefetched": ahead_pk, "prefetched_state": state}, **HX)


def test_a_claim_leased_to_another_reviewer_meanwhile_is_not_acknowledged(client):
    """Overlap 1: rev2's queue hands out claim 1.2 (a lease, no label yet) after rev1's page held
    it ready: rev1's save must not be acknowledged with it (two reviewers on one claim)."""
    world = quality_world(answers=2, claims_per_answer=2, reviewers=2)
    rev1, rev2 = world.reviewers
    c11, c12, c21, _ = world.claims
    client.force_login(rev1)
    assert queue.next_unlabeled_claim(run=world.run, reviewer=rev1, lease=True) == c11
    held = client.get(_url(world, "claim_next", c11), **HX)
    assert held["Citelab-Next-Claim"] == str(c12.pk)
    assert queue.next_claim_in_answer(run=world.run, reviewer=rev2, after=c11, lease=True) == c12

    response = _save_ahead(client, world, c11, c12.pk)

    assert "Citelab-Ack" not in response
    assert panel_claim(response.content.decode()) == c21.pk
    assert sorted(ClaimLease.objects.values_list("reviewer__username", "claim_id")) == [
        ("quality-rev1", c21.pk), ("quality-rev2", c12.pk)]


def test_a_viewer_gets_nothing_held_ready(client):
    from labeling.models import Membership, Role
    world = quality_world(answers=1, claims_per_answer=2, reviewers=1)
    viewer = Membership.objects.get(reviewer=world.reviewers[0])
    viewer.role = Role.VIEWER
    viewer.save()
    client.force_login(world.reviewers[0])

    assert client.get(_url(world, "claim_next", world.claims[0]), **HX).status_code == 403
    page = client.get(reverse("answer_review", args=[world.project.slug, world.run.name,
                                                     world.claims[0].answer_id])).content.decode()
    assert "data-next-url" not in page


def test_a_send_back_in_the_queue_is_held_ready_and_acknowledged(client):
    """rev1 labeled 1.1 and 2.1; the lead sends both back. On 1.1 (the oldest send-back, handed
    out first), the claim held ready is the other send-back 2.1, and the relabel of 1.1 is
    acknowledged with it."""
    from labeling.team.send_backs import send_back_create
    from tests.quality_data import label
    world = quality_world(answers=2, claims_per_answer=2, reviewers=1)
    rev1 = world.reviewers[0]
    c11, _, c21, _ = world.claims
    mine = label(c11, rev1)
    label(c21, rev1)
    send_back_create(run=world.run, claim=c11, reviewer=rev1, lead=world.lead, comment="Look again at P1.")
    send_back_create(run=world.run, claim=c21, reviewer=rev1, lead=world.lead, comment="And this one.")
    client.force_login(rev1)
    assert queue.next_unlabeled_claim(run=world.run, reviewer=rev1, lease=True) == c11

    held = client.get(_url(world, "claim_next", c11), **HX)
    assert held["Citelab-Next-Claim"] == str(c21.pk)
    response = _save_ahead(client, world, c11, c21.pk, base_label=mine.pk)

    assert response.get("Citelab-Ack") == str(c11.pk)


def test_gold_feedback_comes_with_the_acknowledgement(client):
    """Feedback on, no checks (rate 0): saving gold claim 1.1 with 1.2 held ready is acknowledged,
    and the acknowledgement carries the gold feedback into #claim-notice."""
    world = quality_world(answers=1, claims_per_answer=2, reviewers=1, feedback=True, gold_rate=0)
    c11, c12 = world.claims
    _gold(world, [c11])
    client.force_login(world.reviewers[0])

    response = _save_ahead(client, world, c11, c12.pk)

    html = response.content.decode()
    assert response.get("Citelab-Ack") == str(c11.pk)
    notice = html.split('<div id="claim-notice" hx-swap-oob="true">', 1)[1]
    assert '<div class="card gold-feedback agreed" role="status"' in notice and "P1 says so." in notice


# -- found ----------------------------------------------------------------------------------------

def test_a_label_another_reviewer_gave_the_claim_held_ready_is_on_screen_after_the_acknowledgement(client):
    """Overlap 2, not blind: the panel's history shows every reviewer's labels. rev2 labels claim
    1.2 after rev1's page held it ready; rev1's save is acknowledged (1.2 still needs a reviewer,
    its revision is unchanged), so the page keeps the panel it held, whose history says "No label
    yet", and the acknowledgement brings no panel: rev2's label stays off screen until a reload."""
    from tests.quality_data import label
    world = quality_world(answers=1, claims_per_answer=2, reviewers=2, overlap=2, blind=False)
    rev1, rev2 = world.reviewers
    c11, c12 = world.claims
    client.force_login(rev1)
    held = client.get(_url(world, "claim_next", c11), **HX)
    assert "No label yet." in held.content.decode()
    label(c12, rev2, "UNSUPPORTED", "rev2 read P1 otherwise.")

    response = _save_ahead(client, world, c11, c12.pk, state=held["Citelab-Next-State"])

    html = response.content.decode()
    acknowledged = response.get("Citelab-Ack") == str(c11.pk)
    assert not acknowledged or "rev2 read P1 otherwise." in html, (
        "acknowledged, yet the history of the claim kept on screen lacks rev2's label")


def test_moving_to_a_gold_check_in_another_answer_says_nothing_a_last_claim_would_not(client, monkeypatch):
    """Every offset 0, rate 0.5, gold claims 1.3 and 3.3 of four answers of three claims,
    labeling plainly (no claim held ready). Which check comes first depends on the claims'
    ids (the queue's per-reviewer order), and either way the second check pulls the walk
    out of the answer after the first one's with two claims left: 3.3 first, then 4.1 →
    check 1.3; 1.3 first, then 2.1 → check 3.3. Every move to another answer says the same
    neutral sentence (it said "the last one to label there" before: false, and a tell)."""
    monkeypatch.setattr(queue, "gold_offset", lambda run_id, reviewer_id, k: 0.0)
    world = quality_world(answers=4, claims_per_answer=3, reviewers=1)
    world.run.gold_rate = 0.5
    world.run.save()
    _gold(world, [world.claims[2], world.claims[8]])
    by_pk = {c.pk: c for c in world.claims}
    current, moves = _first(client, world), []
    first_check = current.text
    for _ in range(len(world.claims)):
        response = client.post(_url(world, "claim_label", current), {
            "value": "SUPPORTED", "justification": "", "claim": current.pk, "revision": current.revision,
            "base_label": ""}, **HX)
        html = response.content.decode()
        if 'id="claim-panel"' not in html:
            break
        shown = by_pk[panel_claim(html)]
        if shown.answer_id != current.answer_id:
            left = [c.text for c in world.claims if c.answer_id == current.answer_id
                    and not c.labels.filter(reviewer=world.reviewers[0], is_current=True).exists()]
            notice = re.search(r'id="claim-notice".*?(Saved [^<]*)<', html, re.S).group(1).strip()
            moves.append((current, shown.text, left, notice))
        current = shown

    pulled_out = {"Fact 3.3.": ("Fact 4.1.", "Fact 1.3.", ["Fact 4.2.", "Fact 4.3."]),
                  "Fact 1.3.": ("Fact 2.1.", "Fact 3.3.", ["Fact 2.2.", "Fact 2.3."])}[first_check]
    assert pulled_out in [(saved.text, shown, left) for saved, shown, left, _ in moves]
    assert len(moves) >= 4
    assert [notice for *_, notice in moves] == [
        f"Saved SUPPORTED on claim {saved.index} of q{saved.text[5]:0>2}: your queue goes on in this answer."
        for saved, *_ in moves]
