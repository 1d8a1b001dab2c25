"""A judge counts as a human only when a lead promotes it for the run, and a lead may
sort each answer's claims by a judge's verdict, UNSUPPORTED first (SPEC §4.4).

The run is ``judging_run`` (tests/conftest.py): six answers, question ids in queue
order missing, prose, rate-limited, timeout, unknown, valid; claim 1 "<q> one.",
claim 2 "<q> two." (both cited), claim 3 uncited. The judge calls every "one."
SUPPORTED and every "two." UNSUPPORTED; ann (human) labels "valid one." and
"valid two." SUPPORTED."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from labeling.exports.frames import resolved_claims_frame
from labeling.importers.verdicts import VerdictRecord
from labeling.judges.grades import reference_labels
from labeling.judges.runs import run_judge_promote, run_queue_judge_set, verdicts_import
from labeling.models import Claim, Label, Membership, Reviewer, Run
from labeling.review.queue import next_unlabeled_claim
from labeling.review.tallies import run_counts
from labeling.team.adjudication import disputed_claims
from labeling.team.agreement import run_agreement
from labeling.team.memberships import run_settings_set
from tests.judge_server import QUESTIONS


@pytest.fixture
def judged(judging_run) -> Run:
    records = [VerdictRecord(line=n, question_id=q.replace(" ", "-"), claim_index=index, label=label,
                             reason="judge")
               for n, (q, (index, label)) in enumerate(
                   ((q, pair) for q in QUESTIONS for pair in ((1, "SUPPORTED"), (2, "UNSUPPORTED"))), 1)]
    assert verdicts_import(run=judging_run, reviewer_name="judge", records=records).labeled == 12
    ann = Reviewer.objects.create_user(username="ann")
    for text in ("valid one.", "valid two."):
        Label.objects.create(claim=Claim.objects.get(text=text), reviewer=ann, value="SUPPORTED", claim_revision=1)
    return judging_run


def _figures(run: Run) -> tuple[int, int, int, int]:
    """(supported, unsupported, disputed, pending) from the SQL counts; the pandas path must agree."""
    counts = run_counts(run=run, reviewer=Reviewer.objects.get(username="ann"))
    frame, disputes = resolved_claims_frame(Run.objects.get(pk=run.pk))
    cited = frame[frame["n_citations"] > 0]
    assert (int((cited["label"] == "SUPPORTED").sum()), int((cited["label"] == "UNSUPPORTED").sum()), disputes) == (
        counts.supported, counts.unsupported, counts.disagreements)
    return counts.supported, counts.unsupported, counts.disagreements, counts.pending


def test_promoted_judge_counts_as_a_human_until_demoted(judged):
    """Not promoted: only ann's 2 SUPPORTED count, 10 pending, no dispute.
    Promoted: valid one. (S, S) → S; valid two. (ann S, judge U) → disputed; the other
    10 claims take the judge's label, 5 S + 5 U: supported 1 + 5 = 6, unsupported 5,
    disputed 1, pending 1. The grading reference stays the humans' 2 claims."""
    assert _figures(judged) == (2, 0, 0, 10)
    assert list(disputed_claims(run=judged)) == [] and run_agreement(run=judged).disputed == []
    judge = Reviewer.objects.get(username="judge")
    run_judge_promote(run=judged, judge=judge)
    judged = Run.objects.get(pk=judged.pk)
    assert _figures(judged) == (6, 5, 1, 1)
    valid_two = Claim.objects.get(text="valid two.")
    assert list(disputed_claims(run=judged)) == [valid_two]
    assert run_agreement(run=judged).disputed == [valid_two.pk]
    assert run_agreement(run=judged).overall.reviewers == ["ann", "judge"]
    assert len(reference_labels(judged)) == 2
    run_judge_promote(run=judged, judge=None)
    judged = Run.objects.get(pk=judged.pk)
    assert _figures(judged) == (2, 0, 0, 10)
    assert run_agreement(run=judged).overall.reviewers == ["ann"]


def test_only_a_judge_can_be_promoted(judged):
    with pytest.raises(ValidationError, match="'ann' is not an automated labeler"):
        run_judge_promote(run=judged, judge=Reviewer.objects.get(username="ann"))
    assert Run.objects.get(pk=judged.pk).promoted_judge is None


def test_lead_promotes_from_the_grading_page_and_a_reviewer_cannot(judged, client):
    lea, bob = (Reviewer.objects.create_user(username=name) for name in ("lea", "bob"))
    Membership.objects.create(project=judged.project, reviewer=lea, role="lead")
    Membership.objects.create(project=judged.project, reviewer=bob, role="reviewer")
    url = reverse("run_judge_promote", args=["judging", "judged"])
    client.force_login(bob)
    assert client.post(url, {"judge": "judge"}).status_code == 403
    assert Run.objects.get(pk=judged.pk).promoted_judge is None
    client.force_login(lea)
    page = client.get(reverse("judge_grade", args=["judging", "judged", "judge"])).content.decode()
    assert f'action="{url}"' in page and "Count its labels as a human" in page
    response = client.post(url, {"judge": "judge"})
    assert response.status_code == 302 and Run.objects.get(pk=judged.pk).promoted_judge.username == "judge"
    page = client.get(response.url).content.decode()
    assert "A lead promoted this judge for the run" in page and "Stop counting it as a human" in page


def _walk(run: Run, reviewer: Reviewer, steps: int) -> list[str]:
    """The texts of the next ``steps`` claims, labeling each (SUPPORTED) as the reviewer goes."""
    texts, claim = [], None
    for _ in range(steps):
        claim = next_unlabeled_claim(run=run, reviewer=reviewer, after=claim)
        texts.append(claim.text)
        Label.objects.create(claim=claim, reviewer=reviewer, value="SUPPORTED", claim_revision=1)
    return texts


def test_queue_judge_puts_its_unsupported_calls_first_within_each_answer(judged):
    """Claim order: missing one., missing two., prose one. …; with the judge's
    order each answer's "two." (UNSUPPORTED) comes before its "one.". Overlap 2:
    bob's labels leave every claim in cat's queue."""
    run_settings_set(run=judged, overlap=2)
    bob, cat = Reviewer.objects.create_user(username="bob"), Reviewer.objects.create_user(username="cat")
    assert _walk(judged, bob, 3) == ["missing one.", "missing two.", "prose one."]
    run_queue_judge_set(run=judged, judge=Reviewer.objects.get(username="judge"))
    judged = Run.objects.get(pk=judged.pk)
    assert _walk(judged, cat, 5) == ["missing two.", "missing one.", "prose two.", "prose one.",
                                     "rate limited two."]


def test_review_page_follows_the_queue_judges_order(judged, client):
    """Pressing 1 on the review page walks the queue's order, not the claims' index
    order: missing two. → missing one. → prose two. → prose one. (SPEC §4.4 queue
    order; before the one home, the page went missing two. → prose one. → prose two.)."""
    from labeling.models import Membership, Project

    run_queue_judge_set(run=judged, judge=Reviewer.objects.get(username="judge"))
    dan = Reviewer.objects.create_user(username="dan")
    Membership.objects.create(project=Project.objects.get(pk=judged.project_id), reviewer=dan, role="reviewer")
    client.force_login(dan)
    start = client.get(reverse("run_next", args=[judged.project.slug, judged.name]))
    shown = []
    response = client.get(start.url)
    for _ in range(4):
        claim = response.context["review"].current.claim
        shown.append(claim.text)
        url = reverse("claim_label", args=[judged.project.slug, judged.name, claim.pk])
        saved = client.post(url, {"value": "SUPPORTED", "justification": "", "revision": claim.revision,
                                  "claim": claim.pk, "answer": claim.answer_id,
                                  "more_in_answer": "1" if response.context["review"].more_after_current else "0"})
        assert saved.status_code == 302, saved.content[:300]
        response = client.get(saved.url)
    assert shown == ["missing two.", "missing one.", "prose two.", "prose one."]
