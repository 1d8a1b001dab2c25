"""Renaming and deleting a run from its page: the services (run_rename,
run_delete, run_name_clean, run_manage_allowed), the POST-only views with
and without htmx, and the confirmation page that says what will be lost."""

from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.files.storage import default_storage
from django.urls import reverse

from labeling.models import Answer, Claim, Label, LabelTableVersion, LabelValue, Question, Run
from labeling.permissions import run_manage_allowed
from labeling.runs import run_contents, run_delete, run_name_clean, run_rename
from labeling.tables.versions import label_table_snapshot
from tests.conftest import FIXTURES_DIR
from tests.counted_run import counted_run
from tests.factories import ReviewerFactory, RunFactory

SEED = FIXTURES_DIR / "seed_coverage_support.jsonl"


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"


@pytest.fixture
def seed_run(db, reviewer):
    """The seed example (1 answer, 5 claims, 5 labels by seed-reviewer), the
    ``reviewer`` fixture a member of its project, and a second run "other"."""
    from labeling.importers.load import project_for_import, run_import

    project = project_for_import(slug="seed")
    run_import(project=project, source=SEED)
    project.members.add(reviewer)
    RunFactory(project=project, name="other")
    return Run.objects.select_related("project").get(project=project, name="seed-coverage-support")


def url(name: str, run: Run, run_name: str | None = None) -> str:
    return reverse(name, kwargs={"project_slug": run.project.slug, "run_name": run_name or run.name})


# ------------------------------------------------------------------ services


def test_members_and_superusers_may_manage_a_run_others_may_not(seed_run, reviewer, admin_user):
    outsider = ReviewerFactory(username="mallory")

    assert run_manage_allowed(user=reviewer, run=seed_run) is True
    assert run_manage_allowed(user=admin_user, run=seed_run) is True
    assert run_manage_allowed(user=outsider, run=seed_run) is False
    with pytest.raises(PermissionDenied):
        run_rename(run=seed_run, user=outsider, name="taken over")
    with pytest.raises(PermissionDenied):
        run_delete(run=seed_run, user=outsider)
    assert Run.objects.filter(pk=seed_run.pk, name="seed-coverage-support").exists()


@pytest.mark.parametrize(("name", "message"), [
    ("   ", "The run name is blank."),
    ("x" * 201, "The run name is 201 characters long; the limit is 200."),
    ("gpt4o/prompt-v2", "The run name 'gpt4o/prompt-v2' contains '/' or '\\': a run name is one part of the run's "
                        "address; use '-' instead, e.g. 'gpt4o-prompt-v2'."),
    ("other", "Project 'seed' already has a run named 'other'."),
    # Normal form first (labeling.names): fullwidth letters and surrounding spaces.
    (" ｏｔｈｅｒ ", "Project 'seed' already has a run named 'other'."),
])
def test_bad_run_names_are_refused_with_a_reason(seed_run, reviewer, name, message):
    with pytest.raises(ValidationError) as refused:
        run_rename(run=seed_run, user=reviewer, name=name)

    assert refused.value.messages == [message]
    seed_run.refresh_from_db()
    assert seed_run.name == "seed-coverage-support"


def test_rename_keeps_answers_labels_and_versions(seed_run, reviewer):
    version = label_table_snapshot(run=seed_run, note="")

    renamed = run_rename(run=seed_run, user=reviewer, name="  Prüfung – 日本  ")

    assert renamed.pk == seed_run.pk and renamed.name == "Prüfung – 日本"
    assert Run.objects.get(pk=seed_run.pk).name == "Prüfung – 日本"
    assert Answer.objects.filter(run=renamed).count() == 1
    assert Label.objects.filter(claim__answer__run=renamed).count() == 5
    assert list(renamed.versions.values_list("number", flat=True)) == [1]
    assert default_storage.exists(version.file.name)
    # Its own name is not "taken" by itself.
    assert run_name_clean("Prüfung – 日本", project=renamed.project, run=renamed) == "Prüfung – 日本"


def test_delete_removes_the_run_and_what_it_holds_but_keeps_questions_and_version_files(seed_run, reviewer):
    """Seed run: 1 answer, 5 claims, 5 labels by seed-reviewer; claim 1
    relabeled (6 labels, 5 current); one version."""
    claim = Claim.objects.get(answer__run=seed_run, index=1)
    Label.objects.filter(claim=claim).update(is_current=False)
    Label.objects.create(claim=claim, reviewer=Label.objects.filter(claim=claim).get().reviewer,
                         value=LabelValue.UNSUPPORTED, justification="weaker", claim_revision=1)
    version = label_table_snapshot(run=seed_run, note="kept")
    assert run_contents(run=seed_run) == run_contents(run=seed_run).__class__(
        answers=1, claims=5, labels=6, current_labels=5, versions=1)

    removed = run_delete(run=seed_run, user=reviewer)

    assert (removed.answers, removed.claims, removed.labels, removed.versions) == (1, 5, 6, 1)
    assert not Run.objects.filter(pk=seed_run.pk).exists()
    assert Claim.objects.filter(answer__run_id=seed_run.pk).count() == 0
    assert Label.objects.count() == 0
    assert LabelTableVersion.objects.count() == 0
    assert Question.objects.filter(project=seed_run.project).count() == 1
    assert Run.objects.filter(project=seed_run.project).get().name == "other"
    assert default_storage.exists(version.file.name)


# ------------------------------------------------------------------- views


def test_run_page_offers_rename_and_delete(client, seed_run, reviewer):
    client.force_login(reviewer)

    page = client.get(seed_run.get_absolute_url()).content.decode()

    assert f'action="{url("run_rename", seed_run)}"' in page
    assert f'href="{url("run_delete", seed_run)}"' in page


def test_rename_posts_then_redirects_to_the_new_address(client, seed_run, reviewer):
    client.force_login(reviewer)
    assert client.get(url("run_rename", seed_run)).status_code == 405

    response = client.post(url("run_rename", seed_run), {"name": "Prüfung – 日本"})

    assert response.status_code == 302
    assert response["Location"] == url("run_detail", seed_run, "Prüfung – 日本")
    page = client.get(response["Location"]).content.decode()
    assert "Renamed run “seed-coverage-support” to “Prüfung – 日本”." in page
    assert client.get(url("run_detail", seed_run)).status_code == 404


def test_rename_with_htmx_redirects_the_page_or_returns_the_form_with_the_error(client, seed_run, reviewer):
    client.force_login(reviewer)

    refused = client.post(url("run_rename", seed_run), {"name": "a/b"}, HTTP_HX_REQUEST="true")
    body = refused.content.decode()
    assert refused.status_code == 200 and "<html" not in body
    assert "contains &#x27;/&#x27; or" in body and 'value="a/b"' in body
    done = client.post(url("run_rename", seed_run), {"name": "v2"}, HTTP_HX_REQUEST="true")
    assert done.status_code == 200 and done["HX-Redirect"] == url("run_detail", seed_run, "v2")


def test_rename_without_js_shows_the_error_on_the_run_page(client, seed_run, reviewer):
    client.force_login(reviewer)

    page = client.post(url("run_rename", seed_run), {"name": "other"}, follow=True).content.decode()

    assert "Project &#x27;seed&#x27; already has a run named &#x27;other&#x27;." in page
    assert Run.objects.filter(project=seed_run.project).count() == 2


def test_delete_confirmation_page_says_what_is_lost_and_offers_the_label_table(client, seed_run, reviewer):
    label_table_snapshot(run=seed_run, note="")
    client.force_login(reviewer)

    page = client.get(url("run_delete", seed_run)).content.decode()

    assert '<strong id="lost-answers">1</strong> answer' in page
    assert '<strong id="lost-claims">5</strong> claims' in page
    assert '<strong id="lost-labels">5</strong> labels' in page
    assert '<strong id="lost-versions">1</strong> saved version' in page
    assert f'href="{url("label_export", seed_run)}?format=xlsx"' in page
    assert f'href="{url("label_export", seed_run)}?format=xlsx&amp;version=1"' in page
    assert Run.objects.filter(pk=seed_run.pk).exists()


def test_delete_posts_then_goes_to_the_project_page(client, seed_run, reviewer):
    client.force_login(reviewer)

    response = client.post(url("run_delete", seed_run), follow=True)

    assert response.redirect_chain == [(seed_run.project.get_absolute_url(), 302)]
    assert ("Deleted run “seed-coverage-support”: 1 answers, 5 claims, 5 labels and 0 version records"
            in response.content.decode())
    assert not Run.objects.filter(pk=seed_run.pk).exists()


def test_delete_with_htmx_redirects_the_page(client, seed_run, reviewer):
    client.force_login(reviewer)

    response = client.post(url("run_delete", seed_run), HTTP_HX_REQUEST="true")

    assert response["HX-Redirect"] == seed_run.project.get_absolute_url()
    assert not Run.objects.filter(pk=seed_run.pk).exists()


def test_rename_and_delete_are_404_for_non_members_and_need_csrf(seed_run):
    from django.test import Client

    outsider = ReviewerFactory(username="mallory")
    client = Client()
    client.force_login(outsider)
    assert client.post(url("run_rename", seed_run), {"name": "x"}).status_code == 404
    assert client.get(url("run_delete", seed_run)).status_code == 404
    assert client.post(url("run_delete", seed_run)).status_code == 404
    member = Client(enforce_csrf_checks=True)
    member.force_login(seed_run.project.members.get())
    assert member.post(url("run_delete", seed_run)).status_code == 403
    assert member.post(url("run_rename", seed_run), {"name": "x"}).status_code == 403
    assert Run.objects.filter(pk=seed_run.pk, name="seed-coverage-support").exists()


@pytest.mark.django_db
def test_run_contents_query_count(django_assert_num_queries):
    """tests/counted_run.py's run: 3 answers, 9 claims, 18 labels (all current), no version."""
    world = counted_run()
    # One count each.
    with django_assert_num_queries(5):
        contents = run_contents(run=world.run)
    assert (contents.answers, contents.claims, contents.labels, contents.current_labels, contents.versions) == (
        3, 9, 18, 18, 0)
