"""Send back for rework (SPEC §4.4): a lead returns one reviewer's label with a
comment; it comes first in that reviewer's queue with the comment shown; it is
resolved when they relabel or reply; the audit log records both; the run page
counts the open ones."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from labeling.models import AuditEvent, Claim, Label, ReviewerKind, SendBack
from labeling.review import queue
from labeling.team.send_backs import open_send_back_count, send_back_create, send_back_reply
from tests.counted_run import counted_run
from tests.factories import ReviewerFactory
from tests.quality_data import label, quality_world

pytestmark = pytest.mark.django_db


def _claim(claim):
    return Claim.objects.select_related("answer__run__project").get(pk=claim.pk)


@pytest.fixture
def sent(db):
    """rev1 labeled claims 1–3 of q01/q02 (SUPPORTED); the lead sent claim 2 back."""
    world = quality_world(answers=3, claims_per_answer=2)
    rev1 = world.reviewers[0]
    for claim in world.claims[:3]:
        label(claim, rev1)
    send_back_create(run=world.run, claim=_claim(world.claims[1]), reviewer=rev1, lead=world.lead,
                     comment="Check the year: the passage says 2019.")
    return world


def test_sent_back_claim_comes_first_in_that_reviewers_queue_with_the_comment(sent, client):
    world = sent
    rev1, rev2 = world.reviewers
    first = queue.next_unlabeled_claim(run=world.run, reviewer=rev1, lease=True)
    assert first.pk == world.claims[1].pk
    # Only rev1's queue: rev2 walks as before, to the first claim nobody labeled (overlap 1).
    assert queue.next_unlabeled_claim(run=world.run, reviewer=rev2).pk == world.claims[3].pk
    client.force_login(rev1)
    response = client.get(reverse("run_next", args=[world.project.slug, world.run.name]))
    assert response["Location"].endswith(f"?claim={world.claims[1].pk}")
    page = client.get(response["Location"]).content.decode()
    note = page.split('id="send-back-note"')[1].split("</form>")[0]
    assert "Check the year: the passage says 2019." in note and world.lead.username in note
    assert "sent back" in page.split('id="claim-list"')[1].split("</ol>")[0]
    # n passes over it to the walk's next claim.
    skipped = queue.next_unlabeled_claim(run=world.run, reviewer=rev1, after=world.claims[1], lease=True)
    assert skipped.pk == world.claims[3].pk


def test_relabel_resolves_it_and_the_audit_log_records_both(sent, client):
    """Saving the same value again is a relabel here (not a double submit): resolved."""
    world = sent
    rev1 = world.reviewers[0]
    client.force_login(world.lead)
    run_page = client.get(reverse("run_detail", args=[world.project.slug, world.run.name])).content.decode()
    assert '<span class="metric" id="open-send-backs">1</span> open send-back' in run_page
    before = Label.objects.filter(claim=world.claims[1], reviewer=rev1).count()
    relabeled = label(world.claims[1], rev1, "SUPPORTED")
    assert Label.objects.filter(claim=world.claims[1], reviewer=rev1).count() == before + 1
    sent_back = SendBack.objects.get(claim=world.claims[1])
    assert (sent_back.resolution, sent_back.resolved_at is not None) == ("relabel", True)
    assert relabeled.is_current
    actions = list(AuditEvent.objects.filter(run=world.run, claim_id=world.claims[1].pk).order_by("at", "id")
                   .values_list("action", flat=True))
    assert actions == ["label", "send_back", "label", "rework"]
    run_page = client.get(reverse("run_detail", args=[world.project.slug, world.run.name])).content.decode()
    assert '<span class="metric" id="open-send-backs">0</span> open send-backs' in run_page
    assert queue.next_unlabeled_claim(run=world.run, reviewer=rev1).pk == world.claims[3].pk


def test_reply_resolves_it_and_keeps_the_label(sent, client):
    world = sent
    rev1 = world.reviewers[0]
    kept = Label.objects.get(claim=world.claims[1], reviewer=rev1, is_current=True)
    client.force_login(rev1)
    url = reverse("claim_reply", args=[world.project.slug, world.run.name, world.claims[1].pk])
    response = client.post(url, {"reply": "2019 is in the second sentence of P1."}, headers={"HX-Request": "true"})
    assert response.status_code == 200 and "Replied to the lead" in response.content.decode()
    sent_back = SendBack.objects.get(claim=world.claims[1])
    assert (sent_back.resolution, sent_back.reply) == ("reply", "2019 is in the second sentence of P1.")
    assert Label.objects.get(claim=world.claims[1], reviewer=rev1, is_current=True).pk == kept.pk
    event = AuditEvent.objects.get(run=world.run, action="rework")
    assert event.detail == {"resolution": "reply", "reply": "2019 is in the second sentence of P1."}
    with pytest.raises(ValidationError, match="Nothing of yours"):
        send_back_reply(claim=world.claims[1], reviewer=rev1, reply="again")


def test_refused_send_backs_write_nothing(sent):
    world = sent
    rev1, rev2 = world.reviewers
    with pytest.raises(ValidationError, match="already sent back"):
        send_back_create(run=world.run, claim=_claim(world.claims[1]), reviewer=rev1, lead=world.lead, comment="x")
    with pytest.raises(ValidationError, match="no current label"):
        send_back_create(run=world.run, claim=_claim(world.claims[0]), reviewer=rev2, lead=world.lead, comment="x")
    with pytest.raises(ValidationError, match="Write the comment"):
        send_back_create(run=world.run, claim=_claim(world.claims[0]), reviewer=rev1, lead=world.lead,
                         comment="  ")
    judge = ReviewerFactory(username="judge", kind=ReviewerKind.MODEL)
    with pytest.raises(ValidationError, match="not a human reviewer"):
        send_back_create(run=world.run, claim=_claim(world.claims[0]), reviewer=judge, lead=world.lead,
                         comment="x")
    assert SendBack.objects.count() == 1


def test_editing_the_claim_resolves_its_send_backs(sent, client):
    world = sent
    client.force_login(world.lead)
    claim = world.claims[1]
    client.post(reverse("claim_edit", args=[world.project.slug, world.run.name, claim.pk]),
                {"text": "Fact 1.2, reworded.", "revision": claim.revision})
    assert SendBack.objects.get(claim=claim).resolution == "claim_changed"


def test_lead_sends_back_from_the_agreement_and_adjudication_pages(client):
    """Overlap 2: rev1 SUPPORTED, rev2 UNSUPPORTED on claim 1 (disputed). Both pages carry a
    send-back form per human label; posting one from the agreement page returns there."""
    world = quality_world(answers=1, claims_per_answer=1, overlap=2)
    rev1, rev2 = world.reviewers
    label(world.claims[0], rev1, "SUPPORTED")
    label(world.claims[0], rev2, "UNSUPPORTED")
    client.force_login(world.lead)
    agreement_url = reverse("run_agreement", args=[world.project.slug, world.run.name])
    agreement = client.get(agreement_url).content.decode()
    assert agreement.count("Send back to") == 2
    adjudicate = client.get(reverse("run_adjudicate", args=[world.project.slug, world.run.name])).content.decode()
    assert "Send back to quality-rev2" in adjudicate
    response = client.post(reverse("claim_send_back", args=[world.project.slug, world.run.name, world.claims[0].pk]),
                           {"reviewer": rev2.username, "comment": "Read P1 again.", "next": agreement_url})
    assert response.status_code == 302 and response["Location"] == agreement_url
    assert SendBack.objects.get().reviewer == rev2
    client.force_login(rev1)
    assert client.get(agreement_url).content.decode().count("Send back to") == 0


def test_open_send_back_count_is_one_query(django_assert_num_queries):
    world = counted_run()
    send_back_create(run=world.run, claim=world.claims["q01"][0], reviewer=world.rev1, lead=world.lead,
                     comment="Read P1 again.")
    with django_assert_num_queries(1):
        assert open_send_back_count(run=world.run) == 1
    with django_assert_num_queries(1):
        assert open_send_back_count(run=world.run, reviewer=world.rev2) == 0
