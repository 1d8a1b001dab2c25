"""Values a URL or a command line carries that the app cannot use are refused
with a clear message, never a 500 nor a silently empty file (SPEC §7, item 8)."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from labeling.importers.load import run_import
from labeling.models import AuditEvent, Label, Reviewer, ReviewerKind
from tests.conftest import FIXTURES_DIR
from tests.factories import LabelFactory, ProjectFactory, ReviewerFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def gold_client(client, reviewer):
    """The seed 'RAG Citation Quality' run, ``alice`` a member, logged in."""
    project = ProjectFactory(slug="gold")
    project.members.add(reviewer)
    run_import(project=project, source=FIXTURES_DIR / "seed_gold_references.jsonl")
    client.force_login(reviewer)
    return client


@pytest.mark.parametrize("threshold", ["nan", "NaN", "inf", "-inf", "-0.1", "1.5", "1e309", "half"])
def test_a_gold_threshold_that_is_not_a_number_from_0_to_1_is_refused(gold_client, threshold):
    """The panel answers 200, says why, and shows the figures at the default threshold 0.5:
    context precision 2/5 as in tests/test_projects_pages.py."""
    url = reverse("run_gold", args=["gold", "seed-gold-references"])
    response = gold_client.get(url, {"match": "ngram", "threshold": threshold}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    body = response.content.decode()
    assert f"The n-gram threshold {threshold!r}".replace("'", "&#x27;") in body
    assert "is not a number from 0 to 1: the figures use the default, 0.5." in body
    assert response.context["gold"]["threshold"] is None and "2/5 = 0.40" in body


def test_a_gold_threshold_in_range_is_used(gold_client):
    """Threshold 1: only passages whose every trigram is shared match; no error shown."""
    url = reverse("run_gold", args=["gold", "seed-gold-references"])
    response = gold_client.get(url, {"match": "ngram", "threshold": "1"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200 and response.context["gold"]["threshold"] == 1.0
    assert response.context["gold"]["error"] == ""


@pytest.fixture
def seed(db, tmp_path):
    """The seed coverage run (its labels by ``seed-reviewer``, an imported reviewer), lead ``lea``."""
    from labeling.models import Membership

    project = ProjectFactory(slug="seed")
    run_import(project=project, source=FIXTURES_DIR / "seed_coverage_support.jsonl")
    lea = ReviewerFactory(username="lea")
    Membership.objects.create(project=project, reviewer=lea, role="lead")
    return project


@pytest.mark.parametrize("name", ["nobody", "outsider"])
def test_export_labels_refuses_an_unknown_or_non_member_reviewer(seed, tmp_path, name):
    """``outsider`` exists but is no member of project seed and labeled nothing there;
    ``nobody`` does not exist: the same refusal, no file, no audit event."""
    ReviewerFactory(username="outsider")
    path = tmp_path / "labels.csv"
    with pytest.raises(CommandError, match=f"reviewer '{name}' is not a member of project 'seed' and has no label "
                                           "on run 'seed-coverage-support'"):
        call_command("export_labels", "--run", "seed-coverage-support", "--project", "seed", "--reviewer", name,
                     "-o", str(path), stdout=StringIO())
    assert not path.exists() and not AuditEvent.objects.filter(action="export").exists()


def test_export_labels_accepts_a_member_and_an_imported_reviewer(seed, tmp_path):
    """lea (a member without labels: an empty table) and seed-reviewer (no member, but the
    imported labels are theirs: 5 rows, all labeled by them)."""
    assert Reviewer.objects.get(username="seed-reviewer").kind == ReviewerKind.EXTERNAL
    for name in ("lea", "seed-reviewer"):
        call_command("export_labels", "--run", "seed-coverage-support", "--project", "seed", "--reviewer", name,
                     "-o", str(tmp_path / f"{name}.jsonl"), stdout=StringIO())
    assert (tmp_path / "lea.jsonl").read_text().count('"reviewer": "lea"') == 0
    assert (tmp_path / "seed-reviewer.jsonl").read_text().count('"reviewer": "seed-reviewer"') == 5


def test_export_view_refuses_an_unknown_reviewer(client, seed):
    """A lead asking ?reviewer=nobody: back to the versions page with the reason, no file."""
    client.force_login(Reviewer.objects.get(username="lea"))
    url = reverse("label_export", args=["seed", "seed-coverage-support"])
    response = client.get(url, {"format": "csv", "reviewer": "nobody"}, follow=True)
    assert "reviewer &#x27;nobody&#x27; is not a member of project &#x27;seed&#x27;" in response.content.decode()
    assert response.get("Content-Disposition") is None
    # A label of an outsider on the run makes them its reviewer: their table exports.
    outsider = ReviewerFactory(username="nobody")
    LabelFactory(claim=Label.objects.filter(claim__answer__run__project=seed).first().claim, reviewer=outsider)
    assert client.get(url, {"format": "csv", "reviewer": "nobody"})["Content-Disposition"].startswith("attachment")
