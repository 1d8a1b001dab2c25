"""The next claim held ready (labeling.views.review.claim_next and the acknowledged save
of ``_after_label``; issue 24, target 2): what the page fetches after each claim it
shows, what a save made with that claim already on screen answers, and what it answers
when the queue hands out another claim. The browser side is tests/e2e/test_next_claim_e2e.py."""

from __future__ import annotations

import json

import pytest
from django.db import connection
from django.urls import reverse

from labeling.models import Claim, ClaimLease, Reviewer
from labeling.review import claim_edits, label_writes
from tests.factories import AnswerFactory, LabelFactory, RunFactory
from tests.review_site import HX, Site, budget_run, my_labels, panel_claim

pytestmark = pytest.mark.django_db


@pytest.fixture
def site(reviewer):
    """The review tests' project (tests/review_site.py), alice a member."""
    return Site(reviewer)


def next_url(site, claim):
    return site.url("claim_next", claim_id=claim.pk)


def held_ready(client, site, claim) -> tuple[int, str]:
    """What the page holds ready after ``claim`` (``claim_next``): the claim's id and state."""
    response = client.get(next_url(site, claim))
    return int(response["Citelab-Next-Claim"]), response["Citelab-Next-State"]


def save(client, site, claim, *, ahead=None, **extra):
    """POST SUPPORTED on ``claim`` as the page does with htmx, saying it shows the claim
    ``ahead`` (``held_ready``'s pair) meanwhile."""
    data = {"value": "SUPPORTED", "justification": "", "revision": claim.revision, "base_label": "",
            "claim": claim.pk, **extra}
    if ahead is not None:
        data.update(prefetched=ahead[0], prefetched_state=ahead[1])
    return client.post(site.label_url(claim), data, **HX)


def test_the_next_claim_in_the_answer_is_rendered_and_nothing_is_reserved(alice, site):
    response = alice.get(next_url(site, site.c1))

    html = response.content.decode()
    # Claim 2 has no citation: the queue's next claim after claim 1 is claim 3, in the same answer.
    assert response.status_code == 200
    # Its state: revision 1, the run's claims version, no label on it yet.
    assert (response["Citelab-Next-Claim"], response["Citelab-Next-State"],
            response["Citelab-Next-Swap"]) == (str(site.c3.pk), f"1.{site.run.claims_version}.0", "claim-panel")
    assert response["Cache-Control"] == "no-store"
    assert panel_claim(html) == site.c3.pk
    assert '<div id="claim-list" hx-swap-oob="true">' in html
    assert 'class="claim-mark pending current"' in html
    assert "<html" not in html and 'id="review"' not in html
    # The panel carries the URL of the claim after it, for the page to fetch in turn.
    assert f'data-next-url="{next_url(site, site.c3)}"' in html
    assert ClaimLease.objects.count() == 0


def test_after_the_last_claim_of_an_answer_the_next_answer_is_rendered_whole(alice, site):
    response = alice.get(next_url(site, site.c3))

    html = response.content.decode()
    assert (response["Citelab-Next-Claim"], response["Citelab-Next-Swap"]) == (str(site.d1.pk), "review")
    assert html.startswith("<title>q2 · r1 · Citelab</title>")
    assert '<div id="review"' in html and panel_claim(html) == site.d1.pk
    assert '<span id="crumb-question" class="crumb-last" hx-swap-oob="true"> / q2</span>' in html


def test_nothing_follows_the_last_claim_of_the_queue(alice, site, reviewer):
    for claim in (site.c1, site.c3, site.d1):
        LabelFactory(claim=claim, reviewer=reviewer)

    # Only claim 2 of q2 is left: the queue would hand it out again, so nothing is held ready.
    response = alice.get(next_url(site, site.d2))

    assert response.status_code == 204 and response.content == b""


def test_a_project_that_judges_citations_holds_nothing_ready(alice, site):
    site.project.judge_citations = True
    site.project.save()

    response = alice.get(next_url(site, site.c1))

    assert response.status_code == 204
    # Its panel does not ask for it either (its saves go through the judging form).
    assert "data-next-url" not in alice.get(site.review(site.a1, site.c1)).content.decode()


def test_a_claim_of_another_run_is_not_found(alice, site):
    other = RunFactory(project=site.project, name="r2")
    claim = Claim.objects.create(answer=AnswerFactory(run=other, text="x"), index=1, text="x")

    assert alice.get(next_url(site, claim)).status_code == 404


def test_a_save_made_with_the_next_claim_shown_is_acknowledged_out_of_band(alice, site, reviewer):
    ahead = held_ready(alice, site, site.c1)
    assert ahead[0] == site.c3.pk

    response = save(alice, site, site.c1, ahead=ahead)

    html = response.content.decode()
    assert response.status_code == 200
    assert response["Citelab-Ack"] == str(site.c1.pk)
    assert response["HX-Reswap"] == "none"
    assert response["HX-Push-Url"] == site.review(site.a1, site.c3)
    assert json.loads(response["HX-Trigger"]) == {"labelSaved": {"labeled": 1}}
    # No panel: the page shows claim 3 already. The notice, and claim 1 labeled in the text and the list.
    assert 'id="claim-panel"' not in html
    assert ('<div id="claim-notice" hx-swap-oob="true"><p class="notice" role="status">'
            'Saved SUPPORTED on claim 1.</p></div>') in html
    assert 'class="claim-mark SUPPORTED"' in html and 'class="claim-mark pending current"' in html
    assert '<li class="pending current">' in html
    assert my_labels(reviewer) == [("Paris is the capital of France.", "SUPPORTED", "")]
    # The save took the lease of the claim shown.
    assert list(ClaimLease.objects.values_list("reviewer", "claim")) == [(reviewer.pk, site.c3.pk)]


def test_a_save_acknowledged_across_answers_brings_the_title_and_breadcrumb(alice, site, reviewer):
    LabelFactory(claim=site.c1, reviewer=reviewer)
    ahead = held_ready(alice, site, site.c3)
    assert ahead[0] == site.d1.pk

    response = save(alice, site, site.c3, ahead=ahead, more_in_answer=0)

    html = response.content.decode()
    assert response["Citelab-Ack"] == str(site.c3.pk)
    assert response["HX-Push-Url"] == site.review(site.a2, site.d1)
    assert html.startswith("<title>q2 · r1 · Citelab</title>")
    assert '<span id="crumb-question" class="crumb-last" hx-swap-oob="true"> / q2</span>' in html
    assert "Saved SUPPORTED on claim 3 of q1: your queue goes on in this answer." in html
    assert 'id="review"' not in html and 'id="claim-list"' not in html


def test_a_claim_changed_since_it_was_held_ready_is_shown_again_as_it_is_now(alice, site, reviewer):
    ahead = held_ready(alice, site, site.c1)
    claim_edits.claim_edit(claim=site.c3, text="The Seine flows through Paris and Rouen.", base_revision=1,
                           actor=reviewer)

    response = save(alice, site, site.c1, ahead=ahead)

    html = response.content.decode()
    assert "Citelab-Ack" not in response
    assert "HX-Reswap" not in response
    assert panel_claim(html) == site.c3.pk
    assert "The Seine flows through Paris and Rouen." in html
    assert ("Saved SUPPORTED on claim 1. The claim shown while it saved is no longer the next one in your queue "
            "(another reviewer may have taken it, or it changed): this is the next one.") in html
    assert my_labels(reviewer) == [("Paris is the capital of France.", "SUPPORTED", "")]


def test_a_claim_another_reviewer_took_gives_way_to_the_next_one(alice, site, reviewer):
    ahead = held_ready(alice, site, site.c1)
    bob = Reviewer.objects.create_user(username="bob", password="pw-for-tests-1")
    site.project.members.add(bob)
    label_writes.label_save(claim=site.c3, reviewer=bob, value="SUPPORTED", justification="", base_revision=1,
                            base_label_id=None)

    response = save(alice, site, site.c1, ahead=ahead)

    html = response.content.decode()
    # Overlap 1: claim 3 has its reviewer, so the queue hands out q2's claim 1, the whole review swapped.
    assert "Citelab-Ack" not in response
    assert response["HX-Retarget"] == "#review"
    assert response["HX-Push-Url"] == site.review(site.a2, site.d1)
    assert ("Saved SUPPORTED on claim 1 of q1: your queue goes on in this answer. The claim "
            "shown while it saved is no longer the next one in your queue") in html


def test_without_htmx_a_save_naming_a_claim_shown_redirects_as_always(alice, site, reviewer):
    response = alice.post(site.label_url(site.c1), {"value": "SUPPORTED", "revision": 1, "base_label": "",
                                                    "claim": site.c1.pk, "prefetched": site.c3.pk,
                                                    "prefetched_state": "1.0.0"})

    assert response.status_code == 302 and response.url == site.review(site.a1, site.c3)
    assert my_labels(reviewer) == [("Paris is the capital of France.", "SUPPORTED", "")]


# What a lease takes beyond its upsert on PostgreSQL (tests/test_review_label.py says why).
LEASE_LOCK_QUERIES = 3 if connection.vendor == "postgresql" else 0


def budget_url(name: str, claim: Claim) -> str:
    return reverse(name, kwargs={"project_slug": "budget", "run_name": "big", "claim_id": claim.pk})


@pytest.mark.parametrize("answers", [5, 500])
def test_the_claim_held_ready_has_a_constant_query_count(alice, reviewer, django_assert_num_queries, answers):
    claims = budget_run(reviewer, answers)

    # 2: session, user · 1: run with its project and the role · 1: the claim in the run with its answer
    # and question · 1: what comes before the walk (queue.priority_claim) and the next claim in the answer
    # in queue order · review of the answer: 1 (its claims with their citations, passages and labels).
    with django_assert_num_queries(6):
        response = alice.get(budget_url("claim_next", claims[0]))
    assert response["Citelab-Next-Claim"] == str(claims[1].pk)

    # Across answers: 1 priority with the next claim in the answer (none) · 1 priority again with the next
    # answer with work and its question (claim_in_next_answers) · 1 its first claim · 1 the review · 1 its
    # neighbours.
    with django_assert_num_queries(9):
        response = alice.get(budget_url("claim_next", claims[1]))
    assert response["Citelab-Next-Claim"] == str(claims[2].pk)


@pytest.mark.parametrize("answers", [5, 500])
def test_an_acknowledged_save_costs_no_more_than_the_fragment_it_replaces(alice, reviewer,
                                                                          django_assert_num_queries, answers):
    claims = budget_run(reviewer, answers)
    state = alice.get(budget_url("claim_next", claims[0]))["Citelab-Next-State"]
    data = {"claim": claims[0].pk, "value": "SUPPORTED", "revision": 1, "base_label": "",
            "prefetched": claims[1].pk, "prefetched_state": state}

    # The save of tests/test_review_label.py's budget (2 session and user, 1 run, 1 claim, 9 label_save with
    # its savepoint, 1 priority with the next claim, 1 lease upsert (+3 on PostgreSQL), 1 the answer's
    # review), the panel not rendered, and 1: the newest label on the claim shown (views.review.ahead_state).
    with django_assert_num_queries(17 + LEASE_LOCK_QUERIES):
        response = alice.post(budget_url("claim_label", claims[0]), data, **HX)
    assert response["Citelab-Ack"] == str(claims[0].pk)

    # Across answers: 2 + 1 + 1 + 9 as above · 1 priority with the next answer with work and its question
    # · 1 its first claim · 1 lease upsert (+3) · 1 the newest label on it: no review of the next answer is
    # read (the page holds it), where a save without the claim held ready reads it and its neighbours
    # (18 + 3).
    state = alice.get(budget_url("claim_next", claims[1]))["Citelab-Next-State"]
    data = {"claim": claims[1].pk, "value": "SUPPORTED", "revision": 1, "base_label": "", "more_in_answer": 0,
            "prefetched": claims[2].pk, "prefetched_state": state}
    with django_assert_num_queries(17 + LEASE_LOCK_QUERIES):
        response = alice.post(budget_url("claim_label", claims[1]), data, **HX)
    assert response["Citelab-Ack"] == str(claims[1].pk)
