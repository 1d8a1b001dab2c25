"""Backup and restore of a whole project (SPEC §7): ``export_project`` then
``import_project`` gives back every row of every model of the project, with
its ids, and every label table version verifies against its SHA-256.

The project: the 118 real ExpertQA answers (their experts' labels), two
members labeling, a claim split and a merge, an adjudication, an assignment,
two saved versions, the audit log those writes left; and another project that
must stay out of the archive.
"""

from __future__ import annotations

import hashlib
import io
import json
import zipfile

import pytest
from django.core.management import CommandError, call_command
from django.forms.models import model_to_dict

from labeling.backup.project import project_models
from labeling.exports.label_table import canonical_bytes, label_table_frame
from labeling.models import Claim, LabelTableVersion, Project, Reviewer, Role, Run
from labeling.review import claim_edits, label_writes
from labeling.tables.versions import label_table_snapshot, version_read
from labeling.team import adjudication
from labeling.team.memberships import membership_set, run_assign
from tests.factories import ProjectFactory, ReviewerFactory, RunFactory

pytestmark = pytest.mark.django_db(transaction=False)


def _rows(project: Project) -> dict[str, list[dict]]:
    """Every row of the project, model by model, every concrete field (ids included)."""
    out = {}
    for spec in project_models():
        lookup = {"pk": project.pk} if not spec.path else {spec.path: project.pk}
        fields = [f.attname for f in spec.model._meta.concrete_fields]
        out[spec.label] = list(spec.model._base_manager.filter(**lookup).order_by("pk").values(*fields))
    return out


def _reviewers(names: set[str]) -> dict[str, dict]:
    return {r.username: {k: v for k, v in model_to_dict(r).items() if k not in ("groups", "user_permissions")}
            for r in Reviewer.objects.filter(username__in=names)}


@pytest.fixture
def team_project(expertqa_project, settings, tmp_path):
    """expertqa with team work on its largest run, and an unrelated project ``other``."""
    settings.MEDIA_ROOT = tmp_path / "media"
    project = expertqa_project
    lead, ann, bob = (ReviewerFactory(username=name) for name in ("lead-l", "ann", "bob"))
    membership_set(project=project, reviewer=lead, role=Role.LEAD)
    membership_set(project=project, reviewer=ann, role=Role.REVIEWER)
    membership_set(project=project, reviewer=bob, role=Role.REVIEWER)
    run = Run.objects.filter(project=project).order_by("name").first()
    run_assign(run=run, reviewers=[ann, bob])
    label_table_snapshot(run=run, author=lead, note="as imported")
    cited = list(Claim.objects.filter(answer__run=run, citations__isnull=False).distinct().order_by("pk")[:4])
    for claim in cited[:2]:
        label_writes.label_save(claim=claim, reviewer=ann, value="SUPPORTED", justification="ok",
                            base_revision=claim.revision, base_label_id=None)
        label_writes.label_save(claim=claim, reviewer=bob, value="UNSUPPORTED", justification="the span says less",
                            base_revision=claim.revision, base_label_id=None)
    adjudication.adjudication_save(claim=cited[0], lead=lead, value="SUPPORTED", reason="the span says it")
    claim_edits.claim_edit(claim=cited[2], text=cited[2].text + " (reworded)", base_revision=cited[2].revision)
    label_table_snapshot(run=run, author=lead, note="after review")
    other = ProjectFactory(slug="other")
    RunFactory(project=other, name="elsewhere")
    return project


def test_export_then_import_restores_every_row_and_version(team_project, tmp_path, settings):
    """With --keep-passwords and --keep-account-rights a reviewer the restore
    creates (bob) comes back as he was; without them, see
    tests/test_backup_trust.py."""
    project = team_project
    before = _rows(project)
    members = set(project.members.values_list("username", flat=True))
    people = _reviewers(members | set(Reviewer.objects.filter(labels__claim__answer__run__project=project)
                                      .values_list("username", flat=True)))
    tables = {run.name: hashlib.sha256(canonical_bytes(label_table_frame(run, with_passages=False))).hexdigest()
              for run in Run.objects.filter(project=project)}
    versions = {v.pk: (v.sha256, v.file.name) for v in LabelTableVersion.objects.filter(run__project=project)}
    archive = tmp_path / "expertqa.zip"

    call_command("export_project", "expertqa", str(archive))
    LabelTableVersion.objects.filter(run__project=project).delete()
    project.delete()
    Reviewer.objects.filter(username="bob").delete()  # the archive brings him back
    settings.MEDIA_ROOT = tmp_path / "fresh-media"  # and the version files
    call_command("import_project", str(archive), "--keep-passwords", "--keep-account-rights")

    restored = Project.objects.get(slug="expertqa")
    after = _rows(restored)
    assert {label: len(rows) for label, rows in after.items()} == {label: len(rows) for label, rows in before.items()}
    for label in before:
        assert after[label] == before[label], label
    assert _reviewers(set(people)) == people  # bob too, with his password hash
    assert Reviewer.objects.get(username="bob").check_password("pw-for-tests-1")
    assert {run.name: hashlib.sha256(canonical_bytes(label_table_frame(run, with_passages=False))).hexdigest()
            for run in Run.objects.filter(project=restored)} == tables
    restored_versions = LabelTableVersion.objects.filter(run__project=restored)
    assert {v.pk: (v.sha256, v.file.name) for v in restored_versions} == versions
    for version in restored_versions:
        assert hashlib.sha256(version_read(version)).hexdigest() == version.sha256
    assert Project.objects.filter(slug="other").exists()


def test_the_archive_holds_exactly_the_project(team_project, tmp_path):
    """Row counts per model in the manifest are the project's; ``other`` is not in it."""
    archive = tmp_path / "a.zip"
    call_command("export_project", "expertqa", str(archive))
    with zipfile.ZipFile(archive) as opened:
        manifest = json.loads(opened.read("manifest.json"))
        runs = [json.loads(line) for line in opened.read("rows/labeling.run.jsonl").decode().splitlines()]

    rows = _rows(team_project)
    assert {k: v for k, v in manifest["models"].items() if k != "labeling.reviewer"} == {
        label: len(found) for label, found in rows.items()}
    assert manifest["models"]["labeling.answer"] == 118
    assert manifest["models"]["labeling.labeltableversion"] == 2
    assert sorted(run["fields"]["name"] for run in runs) == sorted(
        Run.objects.filter(project=team_project).values_list("name", flat=True))
    assert len(manifest["files"]) == 2


def test_every_model_of_the_app_is_backed_up():
    """Found from the models: a new model with a foreign key towards Project is
    included without touching the backup code (the reviewers come by reference)."""
    labels = {spec.label for spec in project_models()}
    assert {"labeling.project", "labeling.membership", "labeling.question", "labeling.goldpassageid",
            "labeling.run", "labeling.assignment", "labeling.answer", "labeling.passage", "labeling.claim",
            "labeling.citation", "labeling.label", "labeling.adjudication", "labeling.labeltableversion",
            "labeling.auditevent"} <= labels
    from django.apps import apps
    assert labels == {m._meta.label_lower for m in apps.get_app_config("labeling").get_models()} - {
        "labeling.reviewer", "labeling.claimlease", "labeling.ssoidentity"}  # leases: minutes, not data


def test_importing_over_an_existing_project_is_refused_and_writes_nothing(team_project, tmp_path):
    archive = tmp_path / "a.zip"
    call_command("export_project", "expertqa", str(archive))
    counts = {label: len(rows) for label, rows in _rows(team_project).items()}

    with pytest.raises(CommandError, match="Project 'expertqa' already exists here"):
        call_command("import_project", str(archive))
    assert {label: len(rows) for label, rows in _rows(team_project).items()} == counts


def test_a_tampered_archive_is_refused(team_project, tmp_path):
    archive = tmp_path / "a.zip"
    call_command("export_project", "expertqa", str(archive))
    with zipfile.ZipFile(archive) as opened:
        entries = {name: opened.read(name) for name in opened.namelist()}
    version_file = next(name for name in entries if name.startswith("files/"))
    entries[version_file] = entries[version_file].replace(b"SUPPORTED", b"UNSUPPORTED", 1)
    tampered = tmp_path / "tampered.zip"
    with zipfile.ZipFile(tampered, "w") as out:
        for name, data in entries.items():
            out.writestr(name, data)
    LabelTableVersion.objects.filter(run__project=team_project).delete()
    team_project.delete()

    with pytest.raises(CommandError, match=f"{version_file} does not match its SHA-256 in the manifest"):
        call_command("import_project", str(tampered))
    assert not Project.objects.filter(slug="expertqa").exists()
    with pytest.raises(CommandError, match="not a Citelab project archive: not a ZIP file"):
        call_command("import_project", str(_not_a_zip(tmp_path)))


def _not_a_zip(tmp_path):
    path = tmp_path / "notes.zip"
    path.write_bytes(io.BytesIO(b"just text").getvalue())
    return path


def test_rows_belong_to_the_project_through_required_keys():
    """A label is the project's through its claim, not its optional judge run."""
    paths = {spec.label: spec.path for spec in project_models()}
    assert paths["labeling.label"] == "claim__answer__run__project"
    assert paths["labeling.citation"] == "claim__answer__run__project"
    assert paths["labeling.auditevent"] == "project"
