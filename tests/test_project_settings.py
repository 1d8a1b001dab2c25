"""A lead switches citation judging on in the project's settings page, and the
examples of the README and its help pages (templates/docs/*.md) work on the demo
as written (SPEC §7, item 13)."""

from __future__ import annotations

import json
import re
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from labeling.models import Membership, Project
from tests.conftest import REPO_ROOT
from tests.factories import ProjectFactory, ReviewerFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def team(client):
    project = ProjectFactory(slug="team")
    lea, rob = ReviewerFactory(username="lea"), ReviewerFactory(username="rob")
    Membership.objects.create(project=project, reviewer=lea, role="lead")
    Membership.objects.create(project=project, reviewer=rob, role="reviewer")
    return project, lea, rob


def test_a_lead_switches_citation_judging_on_and_off_in_the_settings_page(client, team):
    project, lea, _rob = team
    client.force_login(lea)
    assert reverse("project_settings", args=["team"]) in client.get(project.get_absolute_url()).content.decode()
    page = client.get(reverse("project_settings", args=["team"])).content.decode()
    assert 'name="judge_citations"' in page and 'id="judge-citations" name="judge_citations">' in page  # off
    assert not Project.objects.get(slug="team").judge_citations
    response = client.post(reverse("project_settings", args=["team"]), {"judge_citations": "on"}, follow=True)
    project.refresh_from_db()
    assert (project.judge_citations, project.require_justification_for_supported) == (True, False)
    assert "Judging each citation is on" in response.content.decode()
    assert 'name="judge_citations" checked>' in response.content.decode()
    client.post(reverse("project_settings", args=["team"]), {"require_supported": "on"})
    project.refresh_from_db()
    assert (project.judge_citations, project.require_justification_for_supported) == (False, True)


def test_only_a_lead_changes_the_settings(client, team):
    project, _lea, rob = team
    client.force_login(rob)
    assert client.get(reverse("project_settings", args=["team"])).status_code == 403
    assert client.post(reverse("project_settings", args=["team"]), {"judge_citations": "on"}).status_code == 403
    assert not Project.objects.get(slug="team").judge_citations
    assert reverse("project_settings", args=["team"]) not in client.get(project.get_absolute_url()).content.decode()


# ------------------------------------------------------ README and help pages

DOCS_DIR = REPO_ROOT / "templates" / "docs"
# The README and its help pages, which hold the long sections it links to.
PAGES = {path.relative_to(REPO_ROOT).as_posix(): path.read_text(encoding="utf-8")
         for path in [REPO_ROOT / "README.md", *sorted(DOCS_DIR.glob("*.md"))]}


def test_every_readme_example_with_a_run_names_its_project():
    """The demo holds two projects: a command given --run without --project is refused
    there. Every code span and code line of the README and its help pages that runs a
    command with --run also says --project."""
    with_run = []
    for text in PAGES.values():
        fenced = re.findall(r"```\w*\n(.*?)```", text, re.S)
        prose = re.sub(r"```\w*\n.*?```", "", text, flags=re.S)
        spans = re.findall(r"`([^`]+)`", prose) + [line for block in fenced for line in block.splitlines()]
        with_run += [span for span in spans if re.search(r"(manage\.py|^\w+)\s.*--run\b", span, re.S)]
    # The README's DEBUG=1 example; commands.md's usage lines and its compare example (20);
    # the judge grading example; the three commands the HTTP API page names as the source
    # of its JSON; the estimates' and reviewer quality pages' examples.
    assert len(with_run) == 27
    assert [span for span in with_run if "--project" not in span] == []


def test_the_help_page_sends_leads_to_the_settings_page_not_the_admin():
    page = PAGES["templates/docs/citation-judgments.md"]
    assert "project's **Settings** page" in page and "admin" not in page


def test_readme_examples_run_on_the_demo_as_written():
    """After `manage.py demo`, the README's example `score --project demo --run
    seed-coverage-support` gives the seed's worked example (coverage 5/5, support
    3/5); without --project the command is refused, naming both projects."""
    call_command("demo", "--no-serve", "--no-worker", stdout=StringIO())
    out = StringIO()
    call_command("score", "--project", "demo", "--run", "seed-coverage-support", "--format", "json", stdout=out)
    claims = json.loads(out.getvalue())["claims"]
    assert (claims["claims"], claims["cited"], claims["supported"], claims["coverage"], claims["support"]) == (
        5, 5, 3, 1.0, 0.6)
    with pytest.raises(CommandError, match=r"several projects exist \(demo, demo-judged\): pass --project SLUG"):
        call_command("score", "--run", "seed-coverage-support", stdout=StringIO())
