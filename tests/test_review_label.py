"""The review page's label form (labeling.views.review.claim_label, label_undo):
a save swaps in the next claim (htmx) or redirects (no JavaScript), invalid input
and conflicts save nothing and say why, undo, and the save's query budget."""

from __future__ import annotations

import json

import pytest
from django.db import connection
from django.urls import reverse

from labeling.models import Citation, Claim, Label
from labeling.review import queue
from tests.factories import (
    AnswerFactory,
    CitationFactory,
    ClaimFactory,
    LabelFactory,
    PassageFactory,
    ProjectFactory,
    ReviewerFactory,
    RunFactory,
)
from tests.review_site import HX, Site, budget_run, label_form_html, my_labels, panel_claim

pytestmark = pytest.mark.django_db


@pytest.fixture
def site(reviewer):
    """The review tests' project (tests/review_site.py), alice a member."""
    return Site(reviewer)


def test_htmx_save_swaps_in_the_next_claim_and_signals_progress(alice, site, reviewer):
    response = alice.post(site.label_url(site.c1), {"value": "SUPPORTED", "justification": "", "revision": 1,
                                                    "base_label": "", "claim": site.c1.pk}, **HX)

    html = response.content.decode()
    assert response.status_code == 200
    assert "<html" not in html
    # A first label within the answer: the page adds one to its run progress bar.
    assert json.loads(response["HX-Trigger"]) == {"labelSaved": {"labeled": 1}}
    # Claim 2 has no citation: the queue goes on to claim 3 in the same answer.
    assert response["HX-Push-Url"] == site.review(site.a1, site.c3)
    assert "Saved SUPPORTED on claim 1." in html
    assert 'class="claim-mark SUPPORTED"' in html
    # Claim 3 is the answer's last claim to label: its form says so, and its save goes to the next answer.
    assert '<input type="hidden" name="more_in_answer" value="0">' in html
    assert my_labels(reviewer) == [("Paris is the capital of France.", "SUPPORTED", "")]


def test_relabeling_a_claim_leaves_the_run_progress_where_it_is(alice, site, reviewer):
    mine = LabelFactory(claim=site.c1, reviewer=reviewer)

    response = alice.post(site.label_url(site.c1), {"value": "UNSUPPORTED", "justification": "only the date",
                                                    "revision": 1, "base_label": mine.pk, "claim": site.c1.pk}, **HX)

    assert response["HX-Push-Url"] == site.review(site.a1, site.c3)
    assert json.loads(response["HX-Trigger"]) == {"labelSaved": {"labeled": 0}}
    assert my_labels(reviewer) == [("Paris is the capital of France.", "UNSUPPORTED", "only the date")]


def test_save_told_nothing_is_left_in_the_answer_goes_to_the_next_answer(alice, site, reviewer):
    # The page said no claim after claim 1 was left (another tab labeled claim 3 meanwhile, say).
    response = alice.post(site.label_url(site.c1), {"value": "SUPPORTED", "revision": 1, "base_label": "",
                                                    "more_in_answer": 0, "claim": site.c1.pk}, **HX)

    assert response["HX-Retarget"] == "#review"
    assert response["HX-Push-Url"] == site.review(site.a2, site.d1)
    # Claim 3 stays in the queue: it comes back when the queue wraps around.
    assert queue.next_unlabeled_claim(run=site.run, reviewer=reviewer, after=site.d2) == site.c3


@pytest.mark.parametrize("hint", ["1", "2", "abc", ""])
def test_save_with_any_other_hint_looks_in_the_answer_first(alice, site, reviewer, hint):
    response = alice.post(site.label_url(site.c1), {"value": "SUPPORTED", "revision": 1, "base_label": "",
                                                    "more_in_answer": hint, "claim": site.c1.pk}, **HX)

    assert response["HX-Push-Url"] == site.review(site.a1, site.c3)
    assert my_labels(reviewer) == [("Paris is the capital of France.", "SUPPORTED", "")]


def test_htmx_save_on_the_last_claim_of_an_answer_moves_to_the_next_answer(alice, site, reviewer):
    LabelFactory(claim=site.c1, reviewer=reviewer)

    response = alice.post(site.label_url(site.c3), {"value": "UNSUPPORTED", "justification": "no flow",
                                                    "revision": 1, "base_label": "", "claim": site.c3.pk}, **HX)

    assert response["HX-Retarget"] == "#review"
    assert response["HX-Push-Url"] == site.review(site.a2, site.d1)
    html = response.content.decode()
    assert "Lyon is big." in html
    assert "Saved UNSUPPORTED on claim 3 of q1: your queue goes on in this answer." in html
    # Moving to another answer moves the run progress bar by one too: nothing is recounted.
    assert json.loads(response["HX-Trigger"]) == {"labelSaved": {"labeled": 1}}


def test_plain_form_post_saves_and_redirects_to_the_next_claim(alice, site, reviewer):
    response = alice.post(site.label_url(site.c1), {"value": "SUPPORTED", "justification": "", "revision": 1,
                                                    "base_label": "", "claim": site.c1.pk})

    assert response.status_code == 302
    assert response.url == site.review(site.a1, site.c3)
    page = alice.get(response.url)
    assert "Saved SUPPORTED on claim 1." in page.content.decode()
    assert my_labels(reviewer) == [("Paris is the capital of France.", "SUPPORTED", "")]


def test_plain_form_error_rerenders_the_page_with_the_typed_text(alice, site, reviewer):
    response = alice.post(site.label_url(site.c1), {"value": "UNSUPPORTED", "justification": " ", "revision": 1,
                                                    "base_label": "", "claim": site.c1.pk})

    html = response.content.decode()
    assert response.status_code == 200
    assert "<html" in html
    assert "Claim 1: a justification is required for UNSUPPORTED." in html
    assert my_labels(reviewer) == []


@pytest.mark.parametrize(
    ("claim", "value", "message"),
    [
        ("c1", "UNCITED", "UNCITED on a claim with 1 citation(s): a cited claim is SUPPORTED or UNSUPPORTED"),
        ("c2", "SUPPORTED", "SUPPORTED on a claim without citations: a claim that cites nothing is UNCITED"),
        ("c1", "MAYBE", "Unknown label value &#x27;MAYBE&#x27;"),
    ],
)
def test_invalid_label_gets_a_message_and_saves_nothing(alice, site, reviewer, claim, value, message):
    response = alice.post(site.label_url(getattr(site, claim)),
                          {"claim": getattr(site, claim).pk, "value": value, "justification": "why", "revision": 1,
                           "base_label": ""}, **HX)

    assert response.status_code == 200
    assert message in response.content.decode()
    assert my_labels(reviewer) == []


def test_incomplete_form_gets_a_message(alice, site, reviewer):
    response = alice.post(site.label_url(site.c1), {"value": "SUPPORTED", "claim": site.c1.pk}, **HX)

    assert "came back incomplete (revision)" in response.content.decode()
    assert my_labels(reviewer) == []


def test_claim_from_another_run_is_refused(alice, site, reviewer):
    other_run = RunFactory(project=site.project, name="r2")
    foreign = ClaimFactory(answer=AnswerFactory(run=other_run), index=1)
    CitationFactory(claim=foreign)

    response = alice.post(site.label_url(foreign), {"value": "SUPPORTED", "revision": 1, "base_label": "",
                                                    "claim": foreign.pk})

    assert response.status_code == 404
    assert f"Claim {foreign.pk} is not a claim of run 'r1'" in response.content.decode()
    assert Label.objects.count() == 0


def test_same_reviewer_in_two_tabs_gets_a_conflict_not_an_overwrite(alice, site, reviewer):
    tab_a = alice.get(site.review(site.a1, site.c1)).content.decode()
    tab_b = alice.get(site.review(site.a1, site.c1)).content.decode()
    assert 'name="base_label" value=""' in tab_a and 'name="base_label" value=""' in tab_b
    alice.post(site.label_url(site.c1), {"value": "UNSUPPORTED", "justification": "only the date", "revision": 1,
                                         "base_label": "", "claim": site.c1.pk}, **HX)

    response = alice.post(site.label_url(site.c1), {"value": "SUPPORTED", "justification": "", "revision": 1,
                                                    "base_label": "", "claim": site.c1.pk}, **HX)

    html = response.content.decode()
    assert "Not saved." in html
    assert "in another tab" in html
    assert '<span class="badge UNSUPPORTED">UNSUPPORTED</span> “only the date”' in html
    newer = Label.objects.get(reviewer=reviewer, is_current=True)
    # The re-rendered form is now based on the newer label: saving again is a deliberate overwrite.
    assert f'name="base_label" value="{newer.pk}"' in html
    assert my_labels(reviewer) == [("Paris is the capital of France.", "UNSUPPORTED", "only the date")]


def test_a_conflict_returns_the_form_armed_with_the_label_and_text_the_reviewer_chose(alice, site, reviewer):
    """Tab A saved SUPPORTED; tab B's UNSUPPORTED "only the date" is refused. Tab B's form
    comes back armed with UNSUPPORTED beside its text (so Enter saves exactly that, not
    the SUPPORTED now shown as the reviewer's label), and the field remembers the saved
    justification ("") that Esc puts back. Posting the form as it came back replaces A's label."""
    alice.post(site.label_url(site.c1), {"value": "SUPPORTED", "justification": "", "revision": 1,
                                         "base_label": "", "claim": site.c1.pk}, **HX)

    response = alice.post(site.label_url(site.c1), {"value": "UNSUPPORTED", "justification": "only the date",
                                                    "revision": 1, "base_label": "", "claim": site.c1.pk}, **HX)

    form = label_form_html(response.content.decode())
    newer = Label.objects.get(reviewer=reviewer, is_current=True)
    assert "Not saved." in form
    assert 'data-armed="UNSUPPORTED"' in form
    assert 'class="label-button SUPPORTED chosen"' in form
    textarea = form.split("<textarea", 1)[1]
    assert ' data-saved="" ' in textarea and textarea.split(">", 1)[1].startswith("only the date</textarea>")
    assert f'name="base_label" value="{newer.pk}"' in form
    assert my_labels(reviewer) == [("Paris is the capital of France.", "SUPPORTED", "")]

    alice.post(site.label_url(site.c1), {"value": "UNSUPPORTED", "justification": "only the date", "revision": 1,
                                         "base_label": newer.pk, "claim": site.c1.pk}, **HX)

    assert my_labels(reviewer) == [("Paris is the capital of France.", "UNSUPPORTED", "only the date")]


def test_label_form_for_another_claim_than_its_url_saves_nothing(alice, site, reviewer):
    """The form names the claim that was on screen; the URL must name the same one."""
    response = alice.post(site.label_url(site.c1), {"value": "SUPPORTED", "revision": 1, "base_label": "",
                                                    "claim": site.c3.pk}, **HX)

    assert f"This label form was for claim id {site.c3.pk}, not the claim shown here" in response.content.decode()
    assert panel_claim(response.content.decode()) == site.c1.pk
    assert my_labels(reviewer) == []


def test_label_form_without_the_claim_it_showed_saves_nothing(alice, site, reviewer):
    response = alice.post(site.label_url(site.c1), {"value": "SUPPORTED", "revision": 1, "base_label": ""}, **HX)

    assert "came back incomplete (claim)" in response.content.decode()
    assert my_labels(reviewer) == []


def test_label_form_posts_the_claim_and_revision_on_screen(alice, site):
    html = label_form_html(alice.get(site.review(site.a1, site.c3)).content.decode())

    assert f'<input type="hidden" name="claim" value="{site.c3.pk}">' in html
    assert '<input type="hidden" name="revision" value="1">' in html
    assert f'action="{site.label_url(site.c3)}"' in html


def test_two_reviewers_on_one_claim_do_not_conflict(client, site, reviewer):
    bob = ReviewerFactory(username="bob")
    site.project.members.add(bob)
    client.force_login(reviewer)
    client.post(site.label_url(site.c1), {"value": "SUPPORTED", "revision": 1, "base_label": "", "claim": site.c1.pk},
                **HX)
    client.force_login(bob)

    client.post(site.label_url(site.c1), {"value": "UNSUPPORTED", "justification": "x", "revision": 1,
                                          "base_label": "", "claim": site.c1.pk}, **HX)

    assert sorted(Label.objects.filter(is_current=True).values_list("reviewer__username", "value")) == [
        ("alice", "SUPPORTED"), ("bob", "UNSUPPORTED")]


def test_undo_view_removes_the_last_label_and_shows_its_claim(alice, site, reviewer):
    alice.post(site.label_url(site.c1), {"value": "SUPPORTED", "revision": 1, "base_label": "", "claim": site.c1.pk},
               **HX)
    alice.post(site.label_url(site.c3), {"value": "UNSUPPORTED", "justification": "x", "revision": 1,
                                         "base_label": "", "claim": site.c3.pk}, **HX)

    response = alice.post(site.url("label_undo"), {"claim": site.d1.pk, "answer": site.a2.pk}, **HX)

    assert "Undid your UNSUPPORTED on claim 3; it is back in your queue." in response.content.decode()
    assert response["HX-Retarget"] == "#review"  # back from answer q2 to q1
    assert response["HX-Push-Url"] == site.review(site.a1, site.c3)
    assert my_labels(reviewer) == [("Paris is the capital of France.", "SUPPORTED", "")]
    # Claim 3 has no label of alice's left: the run progress bar goes back by one.
    assert json.loads(response["HX-Trigger"]) == {"labelSaved": {"labeled": -1}}


def test_undo_without_js_redirects(alice, site, reviewer):
    LabelFactory(claim=site.c1, reviewer=reviewer)

    response = alice.post(site.url("label_undo"))

    assert response.status_code == 302
    assert response.url == site.review(site.a1, site.c1)
    assert my_labels(reviewer) == []
    assert alice.post(site.url("label_undo")).url == site.run.get_absolute_url()  # nothing left to undo


def test_undo_with_nothing_to_undo_says_so_in_the_panel(alice, site):
    response = alice.post(site.url("label_undo"), {"answer": site.a1.pk, "claim": site.c3.pk}, **HX)

    html = response.content.decode()
    assert "Nothing to undo: you have no label in run r1." in html
    assert "<html" not in html and f'data-claim="{site.c3.pk}"' in html


# What a lease takes beyond its upsert (labeling.review.queue.lease_take): on PostgreSQL a savepoint,
# the claim's row lock and the release; on SQLite nothing (the upsert runs under the write lock).
LEASE_LOCK_QUERIES = 3 if connection.vendor == "postgresql" else 0


@pytest.mark.parametrize("claims", [5, 500])
def test_save_and_next_fragment_has_a_constant_query_count(alice, reviewer, django_assert_max_num_queries, claims):
    project = ProjectFactory(slug="budget")
    project.members.add(reviewer)
    run = RunFactory(project=project, name="big")
    answer = AnswerFactory(run=run, text="x")
    passage = PassageFactory(answer=answer, passage_id="P1")
    rows = Claim.objects.bulk_create([Claim(answer=answer, index=i, text=f"claim {i}") for i in range(1, claims + 1)])

    Citation.objects.bulk_create([Citation(claim=c, passage=passage, position=0, cited_id="P1") for c in rows])
    url = reverse("claim_label", kwargs={"project_slug": "budget", "run_name": "big", "claim_id": rows[0].pk})

    # 2: session, user · 1: run with its project (membership in the same query) · 1: the claim in the run
    # with its answer and question · label_save: 1 savepoint + 1 release (the test's transaction; BEGIN/COMMIT
    # in production), 1 claim lock that also says whether it is cited, 1 current label, 1 insert, 1 audit
    # event insert, 1 delete of the reviewer's lease on the claim, 1 update resolving a send-back of the label
    # (SPEC §4.4), 1 update of the run's label state (runs.labels_changed) · 1: what comes before the walk
    # (a send-back, a gold check: labeling.review.queue.priority_claim) with the next claim in the answer, in
    # queue order (labeling.review.queue, the order's one home) · its lease (queue.lease_take): 1 conditional
    # upsert, and on
    # PostgreSQL 1 savepoint + 1 row lock + 1 release · review of the answer: 1 for its claims with their
    # citations, passages and the labels of every reviewer (screen._answer_claims). The run progress bar
    # refreshes itself in its own request.
    with django_assert_max_num_queries(16 + LEASE_LOCK_QUERIES):
        response = alice.post(url, {"claim": rows[0].pk, "value": "SUPPORTED", "revision": 1, "base_label": "",
                                    "more_in_answer": 1},
                              **HX)
    assert response["HX-Push-Url"].endswith(f"?claim={rows[1].pk}")


@pytest.mark.parametrize("answers", [5, 500])
def test_save_moving_to_the_next_answer_has_a_constant_query_count(alice, reviewer, django_assert_max_num_queries,
                                                                   answers):
    claims = budget_run(reviewer, answers)
    # The reviewer is on the last claim of the third answer; the page knows nothing is left after it.
    url = reverse("claim_label", kwargs={"project_slug": "budget", "run_name": "big", "claim_id": claims[5].pk})

    # 2: session, user · 1: run · 1: the claim · label_save: 2 savepoint/release, 1 lock, 1 current label,
    # 1 insert, 1 audit event insert, 1 lease delete, 1 send-back update (SPEC §4.4), 1 label state update
    # (runs.labels_changed) · 1: what comes before the
    # walk (labeling.review.queue.priority_claim) with the next answer with a claim to label and its
    # question · 1: its first claim in queue order (labeling.review.queue) · its lease: 1 upsert
    # (+ 3 on PostgreSQL: savepoint, row lock, release) · review of that answer: 1 for its claims with
    # their citations and labels · 1: its neighbours and position (four index lookups).
    with django_assert_max_num_queries(18 + LEASE_LOCK_QUERIES):
        response = alice.post(url, {"claim": claims[5].pk, "value": "SUPPORTED", "revision": 1, "base_label": "",
                                    "more_in_answer": 0},
                              **HX)
    assert response["HX-Push-Url"].endswith(f"?claim={claims[6].pk}")
    assert f"Answer 4 of {answers}" in response.content.decode()
