"""Roles per project (SPEC §2 "role"): leads do everything, reviewers label,
viewers only read; every write URL asks ``permissions.may`` through ``run_for``."""

from __future__ import annotations

import re

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.urls import reverse

from labeling import permissions
from labeling.models import Label, Membership, Reviewer, Role
from labeling.team.memberships import membership_remove, membership_set
from tests.factories import CitationFactory, ClaimFactory, ProjectFactory, ReviewerFactory, RunFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def site():
    """Project ``team`` with run ``r1``: one answer whose two claims each cite a passage,
    and a member of each role."""
    project = ProjectFactory(slug="team")
    run = RunFactory(project=project, name="r1")
    first = CitationFactory(claim=ClaimFactory(answer__run=run, index=1, text="The sky is blue.")).claim
    second = CitationFactory(claim=ClaimFactory(answer=first.answer, index=2, text="Grass is green.")).claim
    users = {}
    for role in Role.values:
        users[role] = ReviewerFactory(username=f"{role}1")
        Membership.objects.create(project=project, reviewer=users[role], role=role)
    return {"project": project, "run": run, "claims": (first, second), "users": users}


def _writes(site):
    """Every write URL of a run and the POST body that would succeed for a lead, by the action it needs."""
    run, (first, second) = site["run"], site["claims"]
    args = [run.project.slug, run.name]
    return {
        "claim_label": (permissions.LABEL, reverse("claim_label", args=[*args, first.pk]),
                        {"value": "SUPPORTED", "justification": "", "revision": first.revision,
                         "claim": first.pk}),
        "claim_split": (permissions.LABEL, reverse("claim_split", args=[*args, first.pk]),
                        {"first": "The sky", "second": "is blue.", "revision": first.revision}),
        "claim_merge": (permissions.LABEL, reverse("claim_merge", args=[*args, first.pk]),
                        {"other": second.pk, "revision": first.revision}),
        "claim_edit": (permissions.LABEL, reverse("claim_edit", args=[*args, first.pk]),
                       {"text": "The sky is often blue.", "revision": first.revision}),
        "label_undo": (permissions.LABEL, reverse("label_undo", args=args), {}),
        "version_create": (permissions.LEAD, reverse("version_create", args=args), {"note": "v"}),
        "label_import": (permissions.LEAD, reverse("label_import", args=args), {}),
        "label_import_apply": (permissions.LEAD, reverse("label_import_apply", args=args), {"token": "x"}),
        "project_members": (permissions.LEAD, reverse("project_members", args=[run.project.slug]),
                            {"reviewer": "viewer1", "role": "viewer"}),
    }


@pytest.mark.parametrize("role", Role.values)
def test_each_role_may_post_to_exactly_the_write_urls_of_its_actions(client, site, role):
    """viewer: every write is 403; reviewer: labeling writes pass, lead writes are 403;
    lead: nothing is 403. Nothing is written on a 403."""
    client.force_login(site["users"][role])
    allowed = {"viewer": set(), "reviewer": {permissions.LABEL}, "lead": {permissions.LABEL, permissions.LEAD}}[role]
    refused = []
    for name, (_action, url, data) in _writes(site).items():
        labels_before = Label.objects.count()
        response = client.post(url, data)
        if response.status_code == 403:
            refused.append(name)
            assert Label.objects.count() == labels_before, name
        else:
            # 409: allowed, but the claim changed under an earlier write of this loop (split, merge).
            assert response.status_code in (200, 302, 409), (name, response.status_code)
    expected = sorted(name for name, (action, _url, _data) in _writes(site).items() if action not in allowed)
    assert sorted(refused) == expected


def test_viewer_reads_every_page_but_sees_the_reason_on_a_refused_label(client, site):
    run, (first, _second) = site["run"], site["claims"]
    client.force_login(site["users"]["viewer"])
    assert client.get(run.get_absolute_url()).status_code == 200
    assert client.get(reverse("answer_review", args=["team", "r1", first.answer_id])).status_code == 200
    response = client.post(reverse("claim_label", args=["team", "r1", first.pk]),
                           {"value": "SUPPORTED", "revision": 1})
    assert response.status_code == 403
    assert Label.objects.count() == 0


def _controls(page: str, site) -> dict[str, bool]:
    """Which write controls and keyboard shortcuts of the review page ``page`` shows."""
    run, first = site["run"], site["claims"][0]
    args = [run.project.slug, run.name]
    urls = {
        "label": reverse("claim_label", args=[*args, first.pk]),
        "judge": reverse("claim_judge", args=[*args, first.pk]),
        "split": reverse("claim_split", args=[*args, first.pk]), "edit": reverse("claim_edit", args=[*args, first.pk]),
        "merge": reverse("claim_merge", args=[*args, first.pk]),
        "factual": reverse("claim_factual", args=[*args, first.pk]), "undo": reverse("label_undo", args=args),
        "next to label": reverse("run_next", args=args),
    }
    shown = {name: url in page for name, url in urls.items()}
    main = page.split("<main", 1)[-1]  # past the header's log-out form
    shown["post forms"] = 'method="post"' in main or "hx-post" in main
    shown["shortcuts"] = sorted(set(re.findall(r'data-shortcut="([^"]+)"', page)))
    return shown


@pytest.mark.parametrize("judging", [False, True])
def test_a_viewer_gets_a_read_only_review_page_without_one_control_that_writes(client, site, judging):
    """SPEC §7: today's main gave a viewer Start labeling, 1/2, split, edit, merge,
    undo and the not-factual switch (pressing 1 replaced the page with a bare 403).
    The reviewer's page of the same claim has every one of them (and, with citation
    judging, the judging form instead of the label form); the viewer's has none, no
    POST form at all, only the j (next claim) and ? shortcuts, and says why."""
    first = site["claims"][0]
    site["project"].judge_citations = judging
    site["project"].save(update_fields=["judge_citations"])
    url = reverse("answer_review", args=["team", "r1", first.answer_id]) + f"?claim={first.pk}"
    client.force_login(site["users"]["reviewer"])
    mine = _controls(client.get(url).content.decode(), site)
    client.force_login(site["users"]["viewer"])
    response = client.get(url)
    page = response.content.decode()
    theirs = _controls(page, site)
    fragment = client.get(url, headers={"HX-Request": "true", "HX-Target": "claim-panel"}).content.decode()

    assert mine == {"label": not judging, "judge": judging, "split": True, "edit": True, "merge": True,
                    "factual": True, "undo": True, "next to label": True, "post forms": True,
                    "shortcuts": ["0", "?", "a", "j", "m", "n", "s", "t", "u"] if judging
                    else ["0", "1", "2", "?", "j", "m", "n", "s", "t", "u"]}
    assert response.status_code == 200
    assert theirs == {"label": False, "judge": False, "split": False, "edit": False, "merge": False,
                      "factual": False, "undo": False, "next to label": False, "post forms": False,
                      "shortcuts": ["?", "j"]}
    assert "Read-only: your role in project team is viewer." in page
    assert "Your progress on" not in page and 'id="label-form"' not in page
    assert "The sky is blue." in page and "Grass is green." in page
    assert "<html" not in fragment and _controls(fragment, site)["post forms"] is False


def test_a_viewer_is_not_offered_start_labeling_and_has_no_queue(client, site):
    """The run and project pages offer a reviewer "Start labeling", never a viewer;
    the next-claim URL takes a viewer back to the run page saying why."""
    run = site["run"]
    client.force_login(site["users"]["reviewer"])
    assert "Start labeling" in client.get(run.get_absolute_url()).content.decode()
    assert "Start labeling" in client.get(site["project"].get_absolute_url()).content.decode()
    client.force_login(site["users"]["viewer"])
    assert "Start labeling" not in client.get(run.get_absolute_url()).content.decode()
    assert "Start labeling" not in client.get(site["project"].get_absolute_url()).content.decode()
    response = client.get(reverse("run_next", args=["team", "r1"]), follow=True)
    assert response.redirect_chain == [(run.get_absolute_url(), 302)]
    assert "Read-only: your role in project team is viewer." in response.content.decode()


def test_a_reviewer_not_assigned_to_the_run_reads_it_without_label_controls(client, site):
    from labeling.team.memberships import run_assign

    reviewer2 = ReviewerFactory(username="reviewer2")
    Membership.objects.create(project=site["project"], reviewer=reviewer2, role=Role.REVIEWER)
    run_assign(run=site["run"], reviewers=[reviewer2])
    first = site["claims"][0]
    client.force_login(site["users"]["reviewer"])
    page = client.get(reverse("answer_review", args=["team", "r1", first.answer_id])).content.decode()
    assert _controls(page, site)["post forms"] is False
    assert "Read-only: you are not assigned to run r1." in page


def test_non_member_gets_404_not_403_on_a_write(client, site):
    client.force_login(ReviewerFactory(username="stranger"))
    first = site["claims"][0]
    response = client.post(reverse("claim_label", args=["team", "r1", first.pk]), {"value": "SUPPORTED", "revision": 1})
    assert response.status_code == 404


def test_superuser_who_is_not_a_member_acts_as_a_lead(client, site):
    boss = ReviewerFactory(username="boss", is_superuser=True)
    assert permissions.visible_projects(user=boss).get(slug="team").my_role == "lead"
    client.force_login(boss)
    assert client.get(reverse("project_members", args=["team"])).status_code == 200


def test_members_page_lists_adds_changes_and_removes(client, site):
    project = site["project"]
    newcomer = ReviewerFactory(username="newcomer")
    client.force_login(site["users"]["lead"])
    page = client.get(reverse("project_members", args=["team"])).content.decode()
    assert 'id="member-reviewer1"' in page and 'id="member-newcomer"' not in page
    url = reverse("project_members", args=["team"])

    client.post(url, {"reviewer": "newcomer", "role": "viewer"})
    assert Membership.objects.get(project=project, reviewer=newcomer).role == "viewer"
    client.post(url, {"reviewer": "newcomer", "role": "reviewer"})
    assert Membership.objects.get(project=project, reviewer=newcomer).role == "reviewer"
    client.post(url, {"reviewer": "newcomer", "action": "remove"})
    assert not Membership.objects.filter(project=project, reviewer=newcomer).exists()
    response = client.post(url, {"reviewer": "nobody-here", "role": "viewer"}, follow=True)
    assert "No reviewer account is named &#x27;nobody-here&#x27;" in response.content.decode()


def test_last_lead_can_be_neither_demoted_nor_removed(site):
    project, lead = site["project"], site["users"]["lead"]
    with pytest.raises(ValidationError, match="lead1 is the last lead of project team"):
        membership_set(project=project, reviewer=lead, role="reviewer")
    with pytest.raises(ValidationError, match="last lead"):
        membership_remove(project=project, reviewer=lead)
    assert Membership.objects.get(project=project, reviewer=lead).role == "lead"
    # With a second lead, the first may step down.
    membership_set(project=project, reviewer=site["users"]["viewer"], role="lead")
    membership_set(project=project, reviewer=lead, role="reviewer")
    assert Membership.objects.get(project=project, reviewer=lead).role == "reviewer"


def test_last_lead_demotion_on_the_page_is_refused_with_the_reason(client, site):
    client.force_login(site["users"]["lead"])
    response = client.post(reverse("project_members", args=["team"]), {"reviewer": "lead1", "role": "viewer"},
                           follow=True)
    assert "lead1 is the last lead of project team" in response.content.decode()
    assert Membership.objects.get(project=site["project"], reviewer=site["users"]["lead"]).role == "lead"


def test_add_reviewer_gives_the_role_and_defaults_to_reviewer(capsys):
    ProjectFactory(slug="alpha")
    ProjectFactory(slug="beta")
    call_command("add_reviewer", "carol", "--password", "a-long-pass-phrase-1", "--project", "alpha")
    call_command("add_reviewer", "dave", "--password", "a-long-pass-phrase-1", "--project", "beta", "--role", "lead")
    assert list(Membership.objects.filter(reviewer__username="carol").values_list("project__slug", "role")) == [
        ("alpha", "reviewer")]
    assert list(Membership.objects.filter(reviewer__username="dave").values_list("project__slug", "role")) == [
        ("beta", "lead")]
    # An existing reviewer joins another project, or changes role, without a new password.
    call_command("add_reviewer", "carol", "--project", "beta", "--role", "viewer")
    assert "Reviewer carol is now a member of: alpha (reviewer), beta (viewer)." in capsys.readouterr().out
    with pytest.raises(CommandError, match="invalid choice: 'boss'"):
        call_command("add_reviewer", "erin", "--project", "beta", "--role", "boss")


def test_demo_user_is_a_lead_and_not_a_superuser():
    call_command("demo", "--no-serve")
    demo = Reviewer.objects.get(username="demo")
    assert not demo.is_superuser
    assert Membership.objects.get(project__slug="demo", reviewer=demo).role == "lead"


@pytest.mark.django_db(transaction=True)
def test_migration_makes_every_existing_member_a_lead():
    """Before 0006 a project had plain members; after it, each is a lead (and nobody else is a member)."""
    executor = MigrationExecutor(connection)
    executor.migrate([("labeling", "0005_default_ordering_by_columns")])
    old = executor.loader.project_state([("labeling", "0005_default_ordering_by_columns")]).apps
    project = old.get_model("labeling", "Project").objects.create(slug="legacy", name="Legacy")
    user_model = old.get_model("labeling", "Reviewer")
    ann, bob = user_model.objects.create(username="ann"), user_model.objects.create(username="bob")
    user_model.objects.create(username="cid")
    project.members.add(ann, bob)

    executor = MigrationExecutor(connection)
    executor.migrate([("labeling", "0006_names_and_team_review")])
    # The models as of 0006: later migrations add columns the current models would select.
    after = executor.loader.project_state([("labeling", "0006_names_and_team_review")]).apps
    memberships = after.get_model("labeling", "Membership").objects.filter(project__slug="legacy")
    assert sorted(memberships.values_list("reviewer__username", "role")) == [("ann", "lead"), ("bob", "lead")]
    legacy = after.get_model("labeling", "Project").objects.get(slug="legacy")
    assert sorted(legacy.members.values_list("username", flat=True)) == ["ann", "bob"]
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())
