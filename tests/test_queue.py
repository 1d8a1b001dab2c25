"""A reviewer's queue (labeling.review.queue) on the review tests' project: the order of
claims and answers to label, an answer's neighbours, and "Start labeling" / the
`n` key (labeling.views.review.run_next) that follow it."""

from __future__ import annotations

import pytest

from labeling.models import Answer, GoldClaim, GoldSource
from labeling.review import queue
from labeling.review.neighbours import answer_neighbours
from labeling.team.send_backs import send_back_create
from tests.counted_run import counted_run
from tests.factories import LabelFactory, ReviewerFactory
from tests.review_site import HX, Site

pytestmark = pytest.mark.django_db


@pytest.fixture
def site(reviewer):
    """The review tests' project (tests/review_site.py), alice a member."""
    return Site(reviewer)


def test_answer_neighbours_give_position_and_both_sides(site):
    first = answer_neighbours(answer=site.a1)
    second = answer_neighbours(answer=site.a2)

    assert (first.previous_id, first.next_id, first.position, first.total) == (None, site.a2.pk, 1, 2)
    assert (second.previous_id, second.next_id, second.position, second.total) == (site.a1.pk, None, 2, 2)


def test_next_answer_to_label_wraps_around_and_ends_empty(site, reviewer):
    assert queue.next_answer_to_label(run=site.run, reviewer=reviewer) == site.a1
    assert queue.next_answer_to_label(run=site.run, reviewer=reviewer, after=site.a1) == site.a2
    # After the last answer the search starts again at the first, then the answer itself.
    assert queue.next_answer_to_label(run=site.run, reviewer=reviewer, after=site.a2) == site.a1
    for claim in (site.c1, site.c3, site.d1):
        LabelFactory(claim=claim, reviewer=reviewer)
    assert queue.next_answer_to_label(run=site.run, reviewer=reviewer, after=site.a2) == site.a2
    LabelFactory(claim=site.d2, reviewer=reviewer)
    assert queue.next_answer_to_label(run=site.run, reviewer=reviewer, after=site.a2) is None


def test_queue_runs_through_cited_unlabeled_claims_in_question_order(site, reviewer):
    # Another reviewer's label on a claim that needs two reviewers: still in alice's queue.
    site.run.overlap = 2
    site.run.save(update_fields=["overlap"])
    LabelFactory(claim=site.d1, reviewer=ReviewerFactory(username="bob"))
    order = []
    after = None
    for _ in range(5):
        claim = queue.next_unlabeled_claim(run=site.run, reviewer=reviewer, after=after)
        order.append(claim.text if claim else None)
        after = claim

    # c2 has no citation; the search wraps around after the last claim of q2.
    assert order == ["Paris is the capital of France.", "The Seine flows through Paris.", "Lyon is big.",
                     "Lyon has a moon.", "Paris is the capital of France."]


def test_queue_skips_labeled_claims_and_ends_empty(site, reviewer):
    for claim in [site.c1, site.d1, site.d2]:
        LabelFactory(claim=claim, reviewer=reviewer)

    assert queue.next_unlabeled_claim(run=site.run, reviewer=reviewer, after=site.d2) == site.c3
    LabelFactory(claim=site.c3, reviewer=reviewer)
    assert queue.next_unlabeled_claim(run=site.run, reviewer=reviewer, after=site.c3) is None


def test_start_labeling_goes_to_the_first_claim_to_label(alice, site, reviewer):
    LabelFactory(claim=site.c1, reviewer=reviewer)

    response = alice.get(site.url("run_next"))

    assert response.url == site.review(site.a1, site.c3)
    assert alice.get(site.url("run_next") + f"?after={site.c3.pk}").url == site.review(site.a2, site.d1)


def test_start_labeling_on_a_finished_run_says_so(alice, site, reviewer):
    for claim in [site.c1, site.c3, site.d1, site.d2]:
        LabelFactory(claim=claim, reviewer=reviewer)

    response = alice.get(site.url("run_next"), follow=True)

    assert "Every cited claim of run r1 carries your label" in response.content.decode()


def test_key_n_swaps_in_the_next_claim_to_label_with_htmx(alice, site, reviewer):
    # Within the answer: the claim panel with the answer text and claim list out of band.
    same = alice.get(site.url("run_next") + f"?after={site.c1.pk}", HTTP_HX_TARGET="claim-panel", **HX)
    assert same["HX-Push-Url"] == site.review(site.a1, site.c3)
    assert "HX-Retarget" not in same
    assert same.content.decode().lstrip().startswith('<section id="claim-panel"')
    # From the last claim of q1: the whole review of q2, retargeted.
    other = alice.get(site.url("run_next") + f"?after={site.c3.pk}", HTTP_HX_TARGET="claim-panel", **HX)
    assert other["HX-Push-Url"] == site.review(site.a2, site.d1)
    assert other["HX-Retarget"] == "#review"
    assert "Lyon is big." in other.content.decode()
    # Nothing left: the same claim, with a notice.
    for claim in [site.c1, site.c3, site.d1, site.d2]:
        LabelFactory(claim=claim, reviewer=reviewer)
    done = alice.get(site.url("run_next") + f"?after={site.d2.pk}", HTTP_HX_TARGET="claim-panel", **HX)
    assert "Every cited claim of run r1 carries your label" in done.content.decode()
    assert done["HX-Push-Url"] == site.review(site.a2, site.d2)
    # The claim the page showed was merged away in another tab: the browser goes to the run page.
    gone = alice.get(site.url("run_next") + "?after=999999", HTTP_HX_TARGET="claim-panel", **HX)
    assert (gone.status_code, gone["HX-Redirect"]) == (200, site.run.get_absolute_url())


# Query counts the docstrings of labeling/review/queue.py state, on tests/counted_run.py's run with
# overlap 3 (not blind): the lead has every cited claim to label, rev1 none.


@pytest.fixture
def world():
    return counted_run(overlap=3, blind=False)


def _answer(world, question_id):
    return Answer.objects.get(run=world.run, question_key=question_id)


def test_priority_claim_query_counts(world, django_assert_num_queries):
    # Nothing comes first: the one statement (open send-back, open gold checks).
    with django_assert_num_queries(1):
        assert queue.priority_claim(run=world.run, reviewer=world.lead) is None
    # A send-back: the statement, then the claim.
    sent = world.claims["q02"][0]
    send_back_create(run=world.run, claim=sent, reviewer=world.rev1, lead=world.lead, comment="Read P1 again.")
    with django_assert_num_queries(2):
        assert queue.priority_claim(run=world.run, reviewer=world.rev1) == sent
    # A gold check that may be due: the reviewer's pace, then (due at rate 1) which check, then the claim.
    gold = world.claims["q03"][0]
    GoldClaim.objects.create(run=world.run, claim=gold, value="SUPPORTED", reason="P1 says one.",
                             source=GoldSource.FILE, claim_revision=gold.revision)
    world.run.gold_rate = 1.0
    with django_assert_num_queries(4):
        assert queue.priority_claim(run=world.run, reviewer=world.lead) == gold
    # Not due (a rate so low the check never comes): the statement and the pace only.
    world.run.gold_rate = 1e-12
    with django_assert_num_queries(2):
        assert queue.priority_claim(run=world.run, reviewer=world.lead) is None


def test_queue_walk_query_counts(world, django_assert_num_queries):
    first, last = _answer(world, "q01"), _answer(world, "q03")
    # One statement: the sample's walk and the run's, and the answer they find with its question.
    with django_assert_num_queries(1):
        assert queue.next_answer_to_label(run=world.run, reviewer=world.lead) == first
    with django_assert_num_queries(1):
        assert queue.next_answer_to_label(run=world.run, reviewer=world.lead, after=first).question_key == "q02"
    # After the last answer: the walk from the start of the run, in the same statement.
    with django_assert_num_queries(1):
        assert queue.next_answer_to_label(run=world.run, reviewer=world.lead, after=last) == first
    claim_1, claim_2 = world.claims["q01"][:2]
    # priority_claim's statement and the queue's first claim in one (queue._PRIORITY_IN_ANSWER_SQL).
    with django_assert_num_queries(1):
        assert queue.first_claim_in_answer(run=world.run, reviewer=world.lead, answer=first) == claim_1
    with django_assert_num_queries(1):
        assert queue.first_claim_in_answer(run=world.run, reviewer=world.lead, answer=first, priority=False) == claim_1
    with django_assert_num_queries(1):
        assert queue.next_claim_in_answer(run=world.run, reviewer=world.lead, after=claim_1) == claim_2
    # With a queue judge: what comes first, where ``after`` stands in the judge's order, the queue.
    world.run.queue_judge = world.judge
    with django_assert_num_queries(3):
        assert queue.next_claim_in_answer(run=world.run, reviewer=world.lead, after=claim_1) == claim_2
    # The neighbours, the position and the sample's place in one statement.
    with django_assert_num_queries(1):
        neighbours = answer_neighbours(answer=first)
    assert (neighbours.previous_id, neighbours.position, neighbours.total, neighbours.sample_size) == (None, 1, 3, 0)
