"""Overlap and assignment (SPEC §4.4): how many reviewers each claim needs, who
works on a run, each reviewer's queue and progress."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from labeling.models import Assignment, Claim, Label, Membership, Run
from labeling.review import queue
from labeling.team import assignments
from labeling.team.memberships import run_assign, run_settings_set
from tests.counted_run import counted_run
from tests.factories import LabelFactory, ProjectFactory, ReviewerFactory
from tests.test_projects_pages import bulk_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def team():
    """Project ``team``, run ``r`` of 2 answers × (claim 1 cited, claim 2 cited, claim 3 uncited):
    4 cited claims, nobody's label yet; lead ``lea``, reviewers ``ann`` and ``bob``, viewer ``vic``."""
    project = ProjectFactory(slug="team")
    run = bulk_run(project, "r", answers=2)
    people = {}
    for name, role in (("lea", "lead"), ("ann", "reviewer"), ("bob", "reviewer"), ("vic", "viewer")):
        people[name] = ReviewerFactory(username=name)
        Membership.objects.create(project=project, reviewer=people[name], role=role)
    cited = list(run.answers.order_by("question_key", "claims__index").values_list("claims__pk", flat=True))
    return {"run": run, "people": people, "cited": [c for i, c in enumerate(cited) if i % 3 != 2]}


def _queue(run, reviewer):
    return sorted(queue.unlabeled_claims(reviewer, run).values_list("pk", flat=True))


def test_claim_with_enough_human_labels_leaves_other_queues(team):
    """overlap 1: ann's label takes the claim out of bob's queue; overlap 2: it stays until bob labels too."""
    run, ann, bob = team["run"], team["people"]["ann"], team["people"]["bob"]
    first = team["cited"][0]
    LabelFactory(claim_id=first, reviewer=ann)
    assert _queue(run, bob) == team["cited"][1:]
    run_settings_set(run=run, overlap=2)
    assert _queue(run, bob) == team["cited"]
    assert queue.next_unlabeled_claim(run=run, reviewer=bob).pk == first
    LabelFactory(claim_id=first, reviewer=bob)
    carol = ReviewerFactory(username="carol")
    assert _queue(run, carol) == team["cited"][1:]


def test_imported_and_model_labels_never_fill_a_claims_overlap(team):
    from labeling.models import ReviewerKind

    run, bob = team["run"], team["people"]["bob"]
    LabelFactory(claim_id=team["cited"][0], reviewer=ReviewerFactory(username="expert", kind=ReviewerKind.EXTERNAL))
    LabelFactory(claim_id=team["cited"][1], reviewer=ReviewerFactory(username="judge", kind=ReviewerKind.MODEL))
    assert _queue(run, bob) == team["cited"]


def test_assigned_reviewers_alone_have_the_run_in_their_queue_and_may_label(client, team):
    run, ann, bob, lea = team["run"], team["people"]["ann"], team["people"]["bob"], team["people"]["lea"]
    run_assign(run=run, reviewers=[ann])
    assert _queue(run, ann) == team["cited"]
    assert _queue(run, bob) == []
    assert queue.next_unlabeled_claim(run=run, reviewer=bob) is None
    url = reverse("claim_label", args=["team", "r", team["cited"][0]])
    client.force_login(bob)
    response = client.post(url, {"value": "SUPPORTED", "revision": 1, "claim": team["cited"][0]})
    assert response.status_code == 403
    assert "not assigned to run" in response.content.decode()
    client.force_login(lea)  # a lead may label any run of the project
    assert client.post(url, {"value": "SUPPORTED", "revision": 1, "claim": team["cited"][0]}).status_code in (
        200, 302)
    assert Label.objects.filter(reviewer=lea).count() == 1


def test_viewers_cannot_be_assigned_and_overlap_stays_within_1_to_5(team):
    with pytest.raises(ValidationError, match="not: vic"):
        run_assign(run=team["run"], reviewers=[team["people"]["vic"]])
    for bad in (0, 6):
        with pytest.raises(ValidationError, match="from 1 to 5"):
            run_settings_set(run=team["run"], overlap=bad)
    assert Run.objects.get(pk=team["run"].pk).overlap == 1


def test_progress_per_reviewer_and_claims_that_reached_their_overlap(team):
    """overlap 2, ann and bob assigned. 4 cited claims c0..c3. ann labels c0, c1; bob labels c0;
    lea (not assigned) labels c3. Human labels per claim: c0 2, c1 1, c2 0, c3 1 → reached 1 (c0).
    Open claims: c1, c2, c3 (3). ann: labeled 2, open ones she labeled 1 (c1) → assigned 2 + (3 − 1) = 4.
    bob: labeled 1, open ones he labeled 0 → 1 + 3 = 4. lea works on nothing: 1/1."""
    run, p = team["run"], team["people"]
    run_settings_set(run=run, overlap=2)
    run_assign(run=run, reviewers=[p["ann"], p["bob"]])
    c0, c1, _c2, c3 = team["cited"]
    for claim, who in ((c0, "ann"), (c1, "ann"), (c0, "bob"), (c3, "lea")):
        LabelFactory(claim_id=claim, reviewer=p[who])
    team_view = assignments.run_reviewers(run=run)
    assert (team_view.cited, team_view.reached, team_view.assigned, team_view.blind) == (4, 1, True, True)
    assert [(r.reviewer.username, r.works_on, r.labeled, r.assigned) for r in team_view.rows] == [
        ("ann", True, 2, 4), ("bob", True, 1, 4), ("lea", False, 1, 1)]


def test_without_assignment_every_lead_and_reviewer_works_on_the_run(team):
    team_view = assignments.run_reviewers(run=team["run"])
    assert [(r.reviewer.username, r.labeled, r.assigned) for r in team_view.rows] == [
        ("ann", 0, 4), ("bob", 0, 4), ("lea", 0, 4)]


def test_lead_sets_overlap_blind_and_assignment_on_the_reviewers_page(client, team):
    url = reverse("run_reviewers", args=["team", "r"])
    client.force_login(team["people"]["ann"])
    assert client.post(url, {"overlap": "2", "assigned": ["ann"]}).status_code == 403
    assert "Assign and set overlap" not in client.get(url).content.decode()
    client.force_login(team["people"]["lea"])
    response = client.post(url, {"overlap": "3", "blind": "auto", "assigned": ["ann", "bob"]}, follow=True)
    run = Run.objects.get(pk=team["run"].pk)
    assert (run.overlap, run.blind, run.is_blind) == (3, None, True)
    assert sorted(Assignment.objects.filter(run=run).values_list("reviewer__username", flat=True)) == ["ann", "bob"]
    assert "Each claim of r needs 3 reviewers; labeling is blind; working on it: ann, bob." in (
        response.content.decode())
    client.post(url, {"overlap": "2", "blind": "off"})
    assert Run.objects.get(pk=run.pk).is_blind is False
    assert not Assignment.objects.filter(run=run).exists()


@pytest.mark.parametrize("answers", [5, 500])
def test_run_page_reviewer_progress_keeps_a_constant_query_budget(client, django_assert_max_num_queries, answers):
    """5 and 500 answers (10 and 1,000 cited claims), two assigned reviewers with labels."""
    project = ProjectFactory(slug="budget")
    ann, bob = ReviewerFactory(username="ann"), ReviewerFactory(username="bob")
    project.members.add(ann, bob)
    run = bulk_run(project, "r", answers=answers, reviewer=ann)
    run_settings_set(run=run, overlap=2)
    run_assign(run=run, reviewers=[ann, bob])
    client.force_login(bob)
    # As test_run_page_query_budget: 27 (the run's row read again before its claim counts are kept),
    # of which the reviewers section's 3: claim totals, labels per reviewer, members.
    with django_assert_max_num_queries(27):
        response = client.get(run.get_absolute_url())
    rows = [(r.reviewer.username, r.labeled, r.assigned) for r in response.context["team"].rows]
    assert rows == [("ann", answers, 2 * answers), ("bob", 0, 2 * answers)]
    assert f'<span class="metric" id="reached-overlap">0/{2 * answers}</span>' in response.content.decode()


def test_start_labeling_tells_an_unassigned_reviewer_why_the_queue_is_empty(client, team):
    run_assign(run=team["run"], reviewers=[team["people"]["ann"]])
    client.force_login(team["people"]["bob"])
    response = client.get(reverse("run_next", args=["team", "r"]), follow=True)
    assert "You are not assigned to run r: nothing is in your queue there." in response.content.decode()


def test_claims_marked_not_factual_leave_the_reviewers_panel_as_they_leave_your_progress(client, team):
    """overlap 1, 4 cited claims c0..c3. ann labels c0, c1, c2; then c2 (labeled) and c3
    (not) are marked not factual. Cited factual claims: c0, c1 = 2, both labeled, so both
    reached their overlap: 2/2. ann: labeled 2 (c2's label stays but leaves every count),
    open claims 0 → 2/2, as her progress says; bob 0/0; lea 0/0. Before: the panel counted
    4 cited claims, 3 reached, ann 3/4 while her progress said 2/2 (SPEC §7)."""
    from labeling.review.citation_judgments import claim_set_factual

    run, p = team["run"], team["people"]
    c0, c1, c2, c3 = team["cited"]
    for claim in (c0, c1, c2):
        LabelFactory(claim_id=claim, reviewer=p["ann"])
    for claim in (c2, c3):
        claim_set_factual(claim=Claim.objects.get(pk=claim), factual=False, actor=p["lea"])

    team_view = assignments.run_reviewers(run=run)
    client.force_login(p["ann"])
    page = client.get(run.get_absolute_url()).content.decode()

    assert (team_view.cited, team_view.reached) == (2, 2)
    assert [(r.reviewer.username, r.labeled, r.assigned) for r in team_view.rows] == [
        ("ann", 2, 2), ("bob", 0, 0), ("lea", 0, 0)]
    assert '<span class="metric">2/2</span> <span class="muted">cited claims labeled</span>' in page
    assert '<span class="metric" id="reached-overlap">2/2</span>' in page
    ann_row = page.split('id="progress-ann"', 1)[1].split("</tr>", 1)[0]
    assert '<span class="metric">2/2</span>' in ann_row


def test_run_reviewers_query_count(django_assert_num_queries):
    """tests/counted_run.py's run: six cited claims, each labeled by rev1 and rev2 (overlap 1:
    all six reached it); nobody assigned, so the lead and both reviewers work on the run."""
    world = counted_run()
    # The cited claims' totals, the human labels per reviewer, the members (+ assigned).
    with django_assert_num_queries(3):
        progress = assignments.run_reviewers(run=world.run)
    assert (progress.cited, progress.reached) == (6, 6)
    assert [(row.reviewer.username, row.labeled) for row in progress.rows] == [("lead", 0), ("rev1", 6), ("rev2", 6)]
    # One more when someone who labeled is no longer a member: their reviewer row.
    Membership.objects.filter(reviewer=world.rev2).delete()
    with django_assert_num_queries(4):
        progress = assignments.run_reviewers(run=world.run)
    assert [(row.reviewer.username, row.works_on) for row in progress.rows][-1] == ("rev2", False)
