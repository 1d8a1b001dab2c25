"""Who may open a project and its runs: members and superusers, on every page
(one rule, ``permissions.visible_projects``/``visible_runs``). Anyone else gets
the 404 an unknown name gets, so a page never tells that a project exists."""

from __future__ import annotations

import pytest
from django.urls import reverse

from labeling import permissions
from tests.factories import AnswerFactory, ProjectFactory, ReviewerFactory, RunFactory

pytestmark = pytest.mark.django_db

PROJECT_PAGES = ["project_detail", "run_compare"]
RUN_PAGES = ["run_detail", "run_summary", "run_next", "version_list", "label_import", "label_export"]


@pytest.fixture
def run():
    project = ProjectFactory(slug="secret")
    run = RunFactory(project=project, name="r1")
    AnswerFactory(run=run)
    return run


def _urls(run):
    return ([reverse(name, args=[run.project.slug]) for name in PROJECT_PAGES]
            + [reverse(name, args=[run.project.slug, run.name]) for name in RUN_PAGES])


def test_member_superuser_and_outsider_on_every_project_and_run_page(client, run):
    member, outsider = ReviewerFactory(username="member"), ReviewerFactory(username="outsider")
    run.project.members.add(member)
    boss = ReviewerFactory(username="boss", is_superuser=True)

    status = {}
    for user in (member, boss, outsider):
        client.force_login(user)
        status[user.username] = [client.get(url).status_code for url in _urls(run)]

    assert all(code in (200, 302) for code in status["member"]), status["member"]
    assert status["boss"] == status["member"]
    assert status["outsider"] == [404] * len(_urls(run))


def test_visible_projects_and_runs_follow_one_rule(run):
    member, outsider = ReviewerFactory(username="member"), ReviewerFactory(username="outsider")
    run.project.members.add(member)
    boss = ReviewerFactory(username="boss", is_superuser=True)
    other = RunFactory(project=ProjectFactory(slug="open"), name="r2")
    other.project.members.add(outsider)

    def seen(user):
        return (sorted(p.slug for p in permissions.visible_projects(user=user)),
                sorted(r.name for r in permissions.visible_runs(user=user)))

    assert seen(member) == (["secret"], ["r1"])
    assert seen(outsider) == (["open"], ["r2"])
    assert seen(boss) == (["open", "secret"], ["r1", "r2"])
