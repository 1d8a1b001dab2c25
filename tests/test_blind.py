"""Blind labeling (SPEC §4.4): on a run whose claims need more than one reviewer, a
reviewer never sees another reviewer's (or a model's) label or justification —
not on any page, fragment, export or in the admin. Leads see everything."""

from __future__ import annotations

import pytest
from django.urls import reverse

from labeling.models import Membership, ReviewerKind
from labeling.team.memberships import run_settings_set
from tests.factories import CitationFactory, ClaimFactory, LabelFactory, ProjectFactory, ReviewerFactory, RunFactory

pytestmark = pytest.mark.django_db

ANN_SAYS = "Ann-reason-the-passage-names-another-city"
JUDGE_SAYS = "Judge-reason-nothing-entails-it"


@pytest.fixture
def blind():
    """Run ``r`` (overlap 2, so blind) of project ``team``: claim 1 (cited) labeled UNSUPPORTED by ann
    and by the model ``judge``, each with a reason; claim 2 (cited) unlabeled. Lead lea, reviewers
    ann and bob (bob is staff, to try the admin)."""
    project = ProjectFactory(slug="team")
    run = RunFactory(project=project, name="r")
    run_settings_set(run=run, overlap=2)
    claim = CitationFactory(claim=ClaimFactory(answer__run=run, index=1, text="Paris is in Spain.")).claim
    CitationFactory(claim=ClaimFactory(answer=claim.answer, index=2, text="It has a river."))
    people = {name: ReviewerFactory(username=name, is_staff=name == "bob") for name in ("lea", "ann", "bob")}
    for name, role in (("lea", "lead"), ("ann", "reviewer"), ("bob", "reviewer")):
        Membership.objects.create(project=project, reviewer=people[name], role=role)
    LabelFactory(claim=claim, reviewer=people["ann"], value="UNSUPPORTED", justification=ANN_SAYS)
    judge = ReviewerFactory(username="judge", kind=ReviewerKind.MODEL)
    LabelFactory(claim=claim, reviewer=judge, value="UNSUPPORTED", justification=JUDGE_SAYS)
    return {"run": run, "claim": claim, "people": people}


def _pages(blind):
    claim, args = blind["claim"], ["team", "r"]
    review = reverse("answer_review", args=[*args, claim.answer_id]) + f"?claim={claim.pk}"
    return {
        "review page": (review, {}),
        "review fragment": (review, {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "claim-panel"}),
        "run page": (reverse("run_detail", args=args), {}),
        "run page, unsupported filter": (reverse("run_detail", args=args) + "?filter=unsupported", {}),
        "run summary fragment": (reverse("run_summary", args=args), {"HTTP_HX_REQUEST": "true"}),
        "project page": (reverse("project_detail", args=["team"]), {}),
        "scatter": (reverse("run_scatter", args=args), {}),
        "versions": (reverse("version_list", args=args), {}),
        "export": (reverse("label_export", args=args) + "?format=csv", {}),
        "version diff": (reverse("version_diff", args=args), {}),
        "compare": (reverse("run_compare", args=["team"]) + "?a=r&b=r", {}),
        "admin labels": (reverse("admin:labeling_label_changelist"), {}),
        "agreement page": (reverse("run_agreement", args=args), {}),
    }


def _body(response):
    return b"".join(response.streaming_content) if response.streaming else response.content


def test_a_reviewer_sees_no_one_elses_label_anywhere_on_a_blind_run(client, blind):
    client.force_login(blind["people"]["bob"])
    leaks = {}
    for place, (url, headers) in _pages(blind).items():
        response = client.get(url, **headers)
        body = _body(response).decode()
        if ANN_SAYS in body or JUDGE_SAYS in body or "UNSUPPORTED by" in body:
            leaks[place] = response.status_code
        assert response.status_code in (200, 403), (place, response.status_code)
    assert leaks == {}


def test_blind_reviewer_counts_and_history_rest_on_their_own_labels(client, blind):
    client.force_login(blind["people"]["bob"])
    run_page = client.get(reverse("run_detail", args=["team", "r"]))
    counts = run_page.context["counts"]
    assert (counts.cited, counts.labeled, counts.supported, counts.unsupported) == (2, 0, 0, 0)
    assert client.get(reverse("run_detail", args=["team", "r"]) + "?filter=unsupported").context[
        "answers"].rows == []
    review = client.get(reverse("answer_review", args=["team", "r", blind["claim"].answer_id]))
    assert review.context["review"].history == []
    for name in ("version_list", "label_export"):
        response = client.get(reverse(name, args=["team", "r"]))
        assert response.status_code == 403
        assert "Labeling on run &#x27;r&#x27; is blind" in response.content.decode()


def test_lead_sees_every_label_on_a_blind_run(client, blind):
    client.force_login(blind["people"]["lea"])
    review = client.get(reverse("answer_review", args=["team", "r", blind["claim"].answer_id]))
    assert ANN_SAYS in review.content.decode() and JUDGE_SAYS in review.content.decode()
    counts = client.get(reverse("run_detail", args=["team", "r"])).context["counts"]
    assert counts.unsupported == 1
    assert client.get(reverse("label_export", args=["team", "r"]) + "?format=csv").status_code == 200


def test_with_blind_labeling_off_reviewers_see_each_others_labels(client, blind):
    run_settings_set(run=blind["run"], overlap=2, blind=False)
    client.force_login(blind["people"]["bob"])
    review = client.get(reverse("answer_review", args=["team", "r", blind["claim"].answer_id]))
    assert ANN_SAYS in review.content.decode()
    assert client.get(reverse("run_detail", args=["team", "r"])).context["counts"].unsupported == 1


def test_a_blind_reviewer_may_take_their_own_labels_offline_but_no_one_elses(client, blind):
    """bob labels claim 2; his own table has his label and nothing of ann's or the judge's."""
    from labeling.models import Claim

    LabelFactory(claim=Claim.objects.get(text="It has a river."), reviewer=blind["people"]["bob"],
                 value="SUPPORTED", justification="Bob-checked-the-river")
    client.force_login(blind["people"]["bob"])
    url = reverse("label_export", args=["team", "r"]) + "?format=csv"
    mine = _body(client.get(url + "&reviewer=me")).decode()
    assert "Bob-checked-the-river" in mine and ANN_SAYS not in mine and JUDGE_SAYS not in mine
    assert client.get(url + "&reviewer=ann").status_code == 403
    assert client.get(url).status_code == 403


def test_the_run_page_offers_a_blind_reviewer_only_what_they_may_open(client, blind):
    client.force_login(blind["people"]["bob"])
    html = client.get(reverse("run_detail", args=["team", "r"])).content.decode()
    for hidden in (reverse("version_list", args=["team", "r"]), reverse("label_import", args=["team", "r"]),
                   reverse("run_agreement", args=["team", "r"]), "?format=csv", "Save version"):
        assert hidden not in html, hidden
    assert "?format=xlsx&amp;reviewer=me" in html
    client.force_login(blind["people"]["lea"])
    html = client.get(reverse("run_detail", args=["team", "r"])).content.decode()
    assert reverse("version_list", args=["team", "r"]) in html and "Save version" in html
