"""Adjudication (SPEC §4.4): a lead settles the claims current reviewers disagree on,
with a reason; that verdict is then the claim's label for every count and score."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.urls import reverse

from labeling.models import Adjudication, Answer, Citation, Claim, Label, Membership, Passage, Question, Run
from labeling.review import tallies
from labeling.review.claim_edits import claim_edit
from labeling.team.adjudication import adjudication_save, dispute_view, disputed_claims
from tests.counted_run import counted_run
from tests.factories import ProjectFactory, ReviewerFactory

pytestmark = pytest.mark.django_db


def disputed_run(project, *, answers):
    """Run ``r`` of ``answers`` answers with 2 cited claims each: claim 1 ann SUPPORTED and bob
    UNSUPPORTED (disputed), claim 2 both SUPPORTED (agreed). Bulk-built for 500."""
    ann, bob = ReviewerFactory(username="ann"), ReviewerFactory(username="bob")
    run = Run.objects.create(project=project, name="r", overlap=2)
    questions = Question.objects.bulk_create(
        [Question(project=project, question_id=f"q{i:04d}", text=f"Question {i}?") for i in range(answers)])
    rows = Answer.objects.bulk_create([Answer(run=run, question=q, question_key=q.question_id, text="A. B.",
                                              content_hash=f"{i:064x}") for i, q in enumerate(questions)])
    passages = Passage.objects.bulk_create([Passage(answer=a, passage_id="P1", position=0, source="doc.pdf",
                                                    text="Alpha beta gamma.") for a in rows])
    claims = Claim.objects.bulk_create([Claim(answer=a, index=k, text=t) for a in rows
                                        for k, t in ((1, "Alpha beta."), (2, "Gamma."))])
    Citation.objects.bulk_create([Citation(claim=c, passage=passages[i // 2], position=0, cited_id="P1")
                                  for i, c in enumerate(claims)])
    Label.objects.bulk_create(
        [Label(claim=c, reviewer=ann, value="SUPPORTED", justification=f"ann-why-{c.index}", claim_revision=1)
         for c in claims]
        + [Label(claim=c, reviewer=bob, value="UNSUPPORTED" if c.index == 1 else "SUPPORTED",
                 justification=f"bob-why-{c.index}", claim_revision=1) for c in claims])
    return run


@pytest.fixture
def lead_site():
    project = ProjectFactory(slug="team")
    run = disputed_run(project, answers=2)
    lea = ReviewerFactory(username="lea")
    Membership.objects.create(project=project, reviewer=lea, role="lead")
    for name in ("ann", "bob"):
        Membership.objects.create(project=project, reviewer=ReviewerFactory(username=name), role="reviewer")
    return run, lea


def test_adjudicated_label_counts_instead_of_the_dispute(lead_site):
    """2 answers: 2 disputed claims, 2 agreed SUPPORTED. Before: supported 2, pending 2 (disputed).
    After the lead says UNSUPPORTED on one: supported 2, unsupported 1, 1 disputed, 1 adjudicated."""
    run, lea = lead_site
    counts = tallies.run_counts(run=run, reviewer=lea)
    assert (counts.supported, counts.unsupported, counts.disagreements, counts.adjudicated) == (2, 0, 2, 0)
    first = disputed_claims(run=run).first()
    adjudication_save(claim=first, lead=lea, value="UNSUPPORTED", reason="the passage says less")
    counts = tallies.run_counts(run=run, reviewer=lea)
    assert (counts.supported, counts.unsupported, counts.disagreements, counts.adjudicated) == (2, 1, 1, 1)
    assert [c.pk for c in disputed_claims(run=run)] != [first.pk]


def test_score_json_reports_adjudicated_and_disputed_claims(lead_site):
    run, lea = lead_site
    adjudication_save(claim=disputed_claims(run=run).first(), lead=lea, value="SUPPORTED", reason="it does")
    out = StringIO()
    call_command("score", "--run", "r", "--project", "team", "--format", "json", stdout=out)
    claims = json.loads(out.getvalue())["claims"]
    assert (claims["supported"], claims["pending"], claims["disputed"], claims["adjudicated"]) == (3, 1, 1, 1)


def test_adjudication_needs_a_judged_value_and_a_reason(lead_site):
    run, lea = lead_site
    claim = disputed_claims(run=run).first()
    with pytest.raises(ValidationError, match="Give the reason"):
        adjudication_save(claim=claim, lead=lea, value="SUPPORTED", reason="  ")
    with pytest.raises(ValidationError, match="SUPPORTED or UNSUPPORTED"):
        adjudication_save(claim=claim, lead=lea, value="UNCITED", reason="x")
    assert not Adjudication.objects.exists()


def test_rewording_a_claim_ends_its_adjudication(lead_site):
    run, lea = lead_site
    claim = disputed_claims(run=run).first()
    adjudication_save(claim=claim, lead=lea, value="SUPPORTED", reason="ok")
    claim_edit(claim=claim, text="Alpha beta, reworded.")
    assert not Adjudication.objects.filter(is_current=True).exists()
    assert tallies.run_counts(run=run, reviewer=lea).adjudicated == 0


def test_adjudication_page_shows_both_sides_and_records_the_verdict(client, lead_site):
    run, lea = lead_site
    url = reverse("run_adjudicate", args=["team", "r"])
    client.force_login(lea)
    first, second = list(disputed_claims(run=run))
    html = client.get(url).content.decode()
    assert "2 disputed claims" in html
    for text in ("ann-why-1", "bob-why-1", "doc.pdf", "gamma.", 'id="verdict-ann"', 'id="verdict-bob"'):
        assert text in html
    response = client.post(url, {"claim": first.pk, "value": "UNSUPPORTED", "reason": ""})
    assert "Give the reason for your verdict" in response.content.decode()
    response = client.post(url, {"claim": first.pk, "value": "UNSUPPORTED", "reason": "says less"}, follow=True)
    assert Adjudication.objects.get(is_current=True).claim_id == first.pk
    assert response.context["dispute"].claim.pk == second.pk
    assert "1 disputed claim" in response.content.decode()


def test_only_leads_open_the_adjudication_page(client, lead_site):
    client.force_login(Membership.objects.get(role="reviewer", reviewer__username="ann").reviewer)
    assert client.get(reverse("run_adjudicate", args=["team", "r"])).status_code == 403


@pytest.mark.parametrize("answers", [5, 500])
def test_adjudication_page_keeps_a_constant_query_budget(client, django_assert_max_num_queries, answers):
    project = ProjectFactory(slug="budget")
    disputed_run(project, answers=answers)
    lea = ReviewerFactory(username="lea")
    Membership.objects.create(project=project, reviewer=lea, role="lead")
    client.force_login(lea)
    # 1 session, 1 user, 1 run with role and assignment; 1 the first 100 disputed claims (with answer and
    # question), 1 their count (only past 100); the claim shown: 1 claim, 1 its current labels with
    # reviewers, 1 its citations with passages.
    with django_assert_max_num_queries(8):
        response = client.get(reverse("run_adjudicate", args=["budget", "r"]))
    assert response.context["n_disputes"] == answers
    assert len(response.context["disputes"]) == min(answers, 100)


def test_dispute_view_query_count(django_assert_num_queries):
    """tests/counted_run.py's run has one open dispute: q02's claim 2 (rev1 SUPPORTED, rev2
    UNSUPPORTED); q02's claim 1 was disputed too, but lead adjudicated it."""
    world = counted_run()
    disputed = world.claims["q02"][1]
    # The disputed claim (with its answer and question), its current labels (+ reviewers),
    # its citations (+ passages).
    with django_assert_num_queries(3):
        view = dispute_view(run=world.run, claim_id=None)
    assert (view.claim, [label.reviewer.username for label in view.labels]) == (disputed, ["judge", "rev1", "rev2"])
    with django_assert_num_queries(3):
        assert dispute_view(run=world.run, claim_id=disputed.pk).claim == disputed
    # A claim that is not disputed: one query finds nothing, then the first dispute's three.
    with django_assert_num_queries(4):
        assert dispute_view(run=world.run, claim_id=world.claims["q02"][0].pk).claim == disputed
