"""The queue rule (SPEC §4.4, §7), whose one home is ``labeling.review.queue``: a cited,
factual claim the reviewer has not labeled, with fewer current human labels plus other
reviewers' unexpired leases than the run's overlap, on a run the reviewer works on. Its
ORM form (``unlabeled_claims``, ``works_on``) and its SQL form (the walk of
``next_answer_to_label``, the queue within an answer, ``lease_take``, the gold check of
``priority_claim``) on one
hand-built run, against each other and against values worked out by hand."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from labeling.models import Assignment, ClaimLease, GoldClaim, GoldSource, Label, Membership, ReviewerKind, Role
from labeling.permissions import visible_runs
from labeling.review import queue
from labeling.team import assignments
from labeling.team.memberships import run_settings_set
from tests.factories import (
    AnswerFactory,
    CitationFactory,
    ClaimFactory,
    LabelFactory,
    PassageFactory,
    ProjectFactory,
    QuestionFactory,
    ReviewerFactory,
    RunFactory,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def world():
    """Run ``r``: q1 (claims 1, 2 cited, 3 uncited), q2 (4 cited but not factual, 5 cited),
    q3 (6 cited). ann labeled 1; an expert (external) and a judge (model) labeled 2; bob
    labeled 5 and holds an unexpired lease on 6; an expired lease of cy sits on 2.
    Members: lead lea, reviewers ann and bob; nobody assigned; overlap 1."""
    project = ProjectFactory(slug="queue")
    people = {name: ReviewerFactory(username=name) for name in ("lea", "ann", "bob", "cy")}
    for name, role in (("lea", Role.LEAD), ("ann", Role.REVIEWER), ("bob", Role.REVIEWER), ("cy", Role.REVIEWER)):
        Membership.objects.create(project=project, reviewer=people[name], role=role)
    run = RunFactory(project=project, name="r")
    claims, answers = {}, {}
    layout = {"q1": (1, 2, 3), "q2": (4, 5), "q3": (6,)}
    for key, indexes in layout.items():
        answer = AnswerFactory(run=run, question=QuestionFactory(project=project, question_id=key))
        answers[key] = answer
        passage = PassageFactory(answer=answer, passage_id="P1", position=0)
        for n in indexes:
            claims[n] = ClaimFactory(answer=answer, index=n, text=f"Fact {n}.", factual=n != 4)
            if n != 3:
                CitationFactory(claim=claims[n], passage=passage, position=0)
    LabelFactory(claim=claims[1], reviewer=people["ann"])
    LabelFactory(claim=claims[2], reviewer=ReviewerFactory(username="expert", kind=ReviewerKind.EXTERNAL))
    LabelFactory(claim=claims[2], reviewer=ReviewerFactory(username="judge", kind=ReviewerKind.MODEL),
                 value="UNSUPPORTED")
    LabelFactory(claim=claims[5], reviewer=people["bob"])
    now = timezone.now()
    ClaimLease.objects.create(run=run, reviewer=people["bob"], claim=claims[6], expires_at=now + timedelta(hours=1))
    ClaimLease.objects.create(run=run, reviewer=people["cy"], claim=claims[2], expires_at=now - timedelta(hours=1))
    return run, people, claims, answers


def _queue(run, reviewer, claims) -> list[int]:
    """The ORM form: claim indexes of ``reviewer``'s queue."""
    index = {claim.pk: n for n, claim in claims.items()}
    return sorted(index[pk] for pk in queue.unlabeled_claims(reviewer, run).values_list("pk", flat=True))


def _walk(run, reviewer) -> list[str]:
    """The SQL form: the answers the next-answer walk visits, from the start round to where it wraps."""
    seen, after = [], None
    while (answer := queue.next_answer_to_label(run=run, reviewer=reviewer, after=after)) is not None:
        if answer.question_key in seen:
            break
        seen.append(answer.question_key)
        after = answer
    return seen


def _answers_of(run, reviewer, claims) -> list[str]:
    by_index = {n: claim.answer.question_key for n, claim in claims.items()}
    return sorted({by_index[n] for n in _queue(run, reviewer, claims)})


def test_queues_by_hand_at_overlap_1_and_2(world):
    """Overlap 1 — ann: 2 (1 is hers, 3 uncited, 4 not factual, 5 has bob's label, 6 bob's
    lease; the expert's and the judge's labels and cy's expired lease never fill a claim);
    bob: 2 and 6 (1 has ann's label, 5 is his, his own lease does not count against him).
    Overlap 2 — ann: 2, 5, 6; bob: 1, 2, 6. The walk visits the answers of those claims."""
    run, people, claims, _answers = world
    ann, bob = people["ann"], people["bob"]

    assert (_queue(run, ann, claims), _queue(run, bob, claims)) == ([2], [2, 6])
    assert (_walk(run, ann), _walk(run, bob)) == (["q1"], ["q1", "q3"])
    run_settings_set(run=run, overlap=2)
    assert (_queue(run, ann, claims), _queue(run, bob, claims)) == ([2, 5, 6], [1, 2, 6])
    assert (_walk(run, ann), _walk(run, bob)) == (["q1", "q2", "q3"], ["q1", "q3"])


@pytest.mark.parametrize("overlap", [1, 2, 3])
def test_the_walk_and_the_queue_agree_for_every_member(world, overlap):
    """For each member and overlap, the answers the SQL walk visits are the answers of the
    ORM queue's claims, in question order."""
    run, people, claims, _answers = world
    run_settings_set(run=run, overlap=overlap)

    for person in people.values():
        assert _walk(run, person) == _answers_of(run, person, claims), (person.username, overlap)


def _in_answers(run, reviewer, answers, claims) -> list[int]:
    """The SQL form within each answer (``queue._in_answer``, from the answer's first claim on):
    claim indexes of ``reviewer``'s queue, answer by answer."""
    index = {claim.pk: n for n, claim in claims.items()}
    return sorted(index[claim.pk] for answer in answers.values()
                  for claim in queue._in_answer(run, reviewer, answer, after_index=0, limit=10))


@pytest.mark.parametrize("overlap", [1, 2, 3])
def test_the_queue_within_an_answer_is_the_orm_queue(world, overlap):
    """For each member and overlap, the claims the in-answer statement hands out (SQL) are
    the ORM queue's claims; by hand at overlap 1: ann 2, bob 2 and 6 (as above)."""
    run, people, claims, answers = world
    run_settings_set(run=run, overlap=overlap)

    for person in people.values():
        assert _in_answers(run, person, answers, claims) == _queue(run, person, claims), (person.username, overlap)
    if overlap == 1:
        assert (_in_answers(run, people["ann"], answers, claims),
                _in_answers(run, people["bob"], answers, claims)) == ([2], [2, 6])
    # After claim 1 only claim 2 is left in q1 for bob; nothing after claim 2.
    bob = people["bob"]
    assert [c.pk for c in queue._in_answer(run, bob, answers["q1"], after_index=1, limit=10)] == [claims[2].pk]
    assert queue._in_answer(run, bob, answers["q1"], after_index=2, limit=10) == []


def test_the_queue_within_an_answer_follows_assignments(world):
    """ann assigned: bob's in-answer queue is empty, ann's unchanged (the ORM form's works_on)."""
    run, people, claims, answers = world
    Assignment.objects.create(run=run, reviewer=people["ann"])

    assert _in_answers(run, people["bob"], answers, claims) == _queue(run, people["bob"], claims) == []
    assert _in_answers(run, people["ann"], answers, claims) == [2]


def test_a_lease_is_taken_exactly_on_the_claims_the_queue_holds(world):
    """dee (a reviewer without labels or leases): ``lease_take`` (SQL) reserves a cited factual
    claim exactly when it is in her queue (ORM). Overlap 1: 2 only (1 and 5 carry a human
    label, 6 bob's lease)."""
    run, people, claims, _answers = world
    dee = ReviewerFactory(username="dee")
    in_queue = _queue(run, dee, claims)

    taken = [n for n in (1, 2, 5, 6) if queue.lease_take(run=run, reviewer=dee, claim=claims[n])]

    assert in_queue == taken == [2]


def test_who_works_on_the_run_is_one_rule_for_the_queue_the_pages_and_the_panel(world):
    """Nobody assigned: everyone works on the run. ann assigned: ann alone — bob's queue and
    walk are empty, ``visible_runs`` says he does not work on it (he may not label), and the
    reviewers panel lists him as not assigned; ann's queue is as before."""
    run, people, claims, _answers = world
    ann, bob = people["ann"], people["bob"]
    assert all(visible_runs(user=p).get(pk=run.pk).works_on for p in (ann, bob))

    Assignment.objects.create(run=run, reviewer=ann)

    assert (_queue(run, ann, claims), _queue(run, bob, claims)) == ([2], [])
    assert (_walk(run, ann), _walk(run, bob)) == (["q1"], [])
    assert (visible_runs(user=ann).get(pk=run.pk).works_on, visible_runs(user=bob).get(pk=run.pk).works_on) == (
        True, False)
    panel = {row.reviewer.username: row.works_on for row in assignments.run_reviewers(run=run).rows}
    assert panel == {"ann": True, "bob": False}


def test_a_gold_check_is_a_claim_that_awaits_the_reviewer(world):
    """Gold on 1, 3 (uncited), 4 (not factual) and 6, rate 1: ann's check is 6 (1 is
    labeled by her; 3 and 4 never await anyone), whatever bob's lease on it (a check
    ignores the overlap). Once ann labels 6 nothing is left to check."""
    run, people, claims, _answers = world
    ann = people["ann"]
    for n in (1, 3, 4, 6):
        GoldClaim.objects.create(run=run, claim=claims[n], value="SUPPORTED", reason="Said so.",
                                 source=GoldSource.FILE, lead=people["lea"], claim_revision=claims[n].revision)
    run.gold_rate = 1.0
    run.save()

    assert queue.priority_claim(run=run, reviewer=ann).pk == claims[6].pk
    LabelFactory(claim=claims[6], reviewer=ann)
    assert queue.priority_claim(run=run, reviewer=ann) is None


def test_needs_reviewer_counts_the_human_labels_of_a_claim(world):
    """The claim list's open flag: claim 2 (an expert's and a judge's labels) still needs a
    reviewer at overlap 1; claim 5 (bob's) does not, and does at overlap 2."""
    _run, _people, claims, _answers = world

    def labels(n):
        return list(Label.objects.filter(claim=claims[n]).select_related("reviewer"))

    assert queue.needs_reviewer(labels(2), 1) and not queue.needs_reviewer(labels(5), 1)
    assert queue.needs_reviewer(labels(5), 2)
