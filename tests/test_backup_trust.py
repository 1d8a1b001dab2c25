"""A restore stays inside its project (SPEC §7): every row of an archive
must belong to the archived project, reviewers map by login name to
existing accounts that the restore never changes, and accounts it creates
come back without staff or superuser rights and without a usable password
unless ``--keep-account-rights`` / ``--keep-passwords`` ask for them.

Each archive here is a genuine export of project ``small`` (one row of every
model, tests/backup_archives.py) with one change, its manifest made to match
(row counts, hashes) so that the change is the only thing wrong; ``small``
is deleted after the export, so its ids are free. Project ``other`` (the
same shape) is the project an attack reaches for. Every refusal leaves the
database as it was: ``model_counts`` before and after.
"""

from __future__ import annotations

import io
import re

import pytest
from django.contrib.auth.hashers import make_password
from django.core.management import CommandError, call_command
from django.forms.models import model_to_dict

from labeling.backup.project import project_models
from labeling.models import Claim, Label, LabelTableVersion, Membership, Project, Reviewer, Role
from labeling.tables.versions import version_read
from labeling.team.memberships import membership_set
from tests.backup_archives import build_project, consistent, model_counts, read_members, rows_of, set_rows, write_zip

pytestmark = pytest.mark.django_db(transaction=False)

USER = "labeling.reviewer"


def _delete(project: Project) -> None:
    LabelTableVersion.objects.filter(run__project=project).delete()  # PROTECT on run
    project.delete()


@pytest.fixture
def small(settings, tmp_path):
    """``(archive path, project other)``: ``small`` exported, then deleted."""
    settings.MEDIA_ROOT = tmp_path / "media"
    other = build_project("other")
    project = build_project("small")
    path = tmp_path / "small.zip"
    call_command("export_project", "small", str(path), stdout=io.StringIO())
    _delete(project)
    return path, other


def _import(path, *options) -> str:
    out = io.StringIO()
    call_command("import_project", str(path), *options, stdout=out)
    return out.getvalue()


def _refused(path, match: str) -> None:
    """The import of ``path`` fails with ``match`` and writes nothing."""
    before = model_counts()
    with pytest.raises(CommandError, match=match) as refusal:
        _import(path)
    assert "Nothing was imported." in str(refusal.value)
    assert model_counts() == before
    assert not Project.objects.filter(slug="small").exists()


def _pk(members: dict[str, bytes], label: str, **fields) -> int:
    return next(row["pk"] for row in rows_of(members, label)
                if all(row["fields"][k] == v for k, v in fields.items()))


def _mallory(*, superuser: bool, password: str = "known-pw-9") -> dict:
    return {"model": USER, "pk": 9001, "fields": {
        "password": make_password(password), "last_login": None, "is_superuser": superuser, "username": "mallory",
        "first_name": "", "last_name": "", "email": "", "is_staff": superuser, "is_active": True,
        "date_joined": "2024-05-01T10:00:00+00:00", "kind": "human"}}


@pytest.mark.parametrize("outsider", ["mallory", "existing"])
def test_an_outside_account_made_lead_of_another_project_is_refused(small, tmp_path, outsider):
    """The attack of the issue: a membership row of the archive names project
    ``other`` (not the archived one) with role lead. On the old code the
    archive was accepted and the account led ``other``."""
    path, other = small
    members = read_members(path)
    mallory = _mallory(superuser=False)
    if outsider == "existing":
        Reviewer.objects.create_user(username="outsider", password="pw-for-tests-1")
        mallory["fields"]["username"] = "outsider"
    set_rows(members, USER, [*rows_of(members, USER), mallory])
    memberships = rows_of(members, "labeling.membership")
    set_rows(members, "labeling.membership", [*memberships, {"model": "labeling.membership", "pk": 9002, "fields": {
        "project": other.pk, "reviewer": 9001, "role": "lead"}}])
    leads = set(Membership.objects.filter(project=other, role=Role.LEAD).values_list("reviewer__username", flat=True))

    _refused(write_zip(tmp_path / "evil.zip", consistent(members)),
             rf"labeling\.membership row 9002 \(rows/labeling\.membership\.jsonl line {len(memberships) + 1}\), "
             rf"field project: labeling\.project {other.pk} is not a row of the archive; every row must belong "
             "to the archived project")
    assert set(Membership.objects.filter(project=other, role=Role.LEAD)
               .values_list("reviewer__username", flat=True)) == leads == {"other-lead"}
    assert not Reviewer.objects.filter(username="mallory").exists()


def test_a_label_on_a_claim_of_another_project_is_refused(small, tmp_path):
    path, other = small
    members = read_members(path)
    claim = Claim.objects.get(answer__run__project=other)
    ann = _pk(members, USER, username="small-ann")
    labels = rows_of(members, "labeling.label")
    set_rows(members, "labeling.label", [*labels, {"model": "labeling.label", "pk": 9003, "fields": {
        **labels[0]["fields"], "claim": claim.pk, "reviewer": ann, "supersedes": None, "judge_run": None,
        "is_current": True, "is_stale": False, "value": "UNSUPPORTED", "justification": "planted"}}])
    before = list(Label.objects.filter(claim=claim).values_list("pk", "reviewer__username", "value"))

    _refused(write_zip(tmp_path / "evil.zip", consistent(members)),
             rf"labeling\.label row 9003 \(rows/labeling\.label\.jsonl line {len(labels) + 1}\), field claim: "
             rf"labeling\.claim {claim.pk} is not a row of the archive")
    assert list(Label.objects.filter(claim=claim).values_list("pk", "reviewer__username", "value")) == before


def _keys() -> list[tuple[str, str]]:
    """Every foreign key of every model of the app to another row of the app (not to a reviewer)."""
    user_model = Reviewer
    return [(spec.label, f.name) for spec in project_models() for f in spec.model._meta.local_fields
            if f.is_relation and f.related_model is not user_model]


@pytest.mark.parametrize(("label", "key"), _keys())
def test_every_key_pointing_into_another_project_is_refused(small, tmp_path, label, key):
    """Found from the models, so a key added later is covered: the first row
    of ``label`` in the archive gets, as ``key``, the id of a row of project
    ``other``; the message names the table, the row and the field."""
    path, other = small
    members = read_members(path)
    spec = next(spec for spec in project_models() if spec.label == label)
    target_model = spec.model._meta.get_field(key).related_model
    target_spec = next(s for s in project_models() if s.model is target_model)
    lookup = {"pk": other.pk} if not target_spec.path else {target_spec.path: other.pk}
    target = target_model._base_manager.filter(**lookup).order_by("pk").values_list("pk", flat=True).first()
    assert target is not None, f"project other has no {target_spec.label}"
    rows = rows_of(members, label)
    rows[0]["fields"][key] = target
    set_rows(members, label, rows)
    table, target_table = re.escape(label), re.escape(target_spec.label)

    _refused(write_zip(tmp_path / "evil.zip", consistent(members)),
             rf"{table} row {rows[0]['pk']} \(rows/{table}\.jsonl line 1\), field {key}: {target_table} {target} "
             "is not a row of the archive")


def test_a_key_to_a_reviewer_the_archive_does_not_hold_is_refused(small, tmp_path):
    path, other = small
    members = read_members(path)
    outsider = Reviewer.objects.get(username="other-lead")
    runs = rows_of(members, "labeling.run")
    runs[0]["fields"]["promoted_judge"] = outsider.pk
    set_rows(members, "labeling.run", runs)
    _refused(write_zip(tmp_path / "evil.zip", consistent(members)),
             rf"labeling\.run row {runs[0]['pk']} \(rows/labeling\.run\.jsonl line 1\), field promoted_judge: "
             rf"reviewer {outsider.pk} is not one of the archive's reviewers")


def test_a_reviewer_no_row_names_is_refused(small, tmp_path):
    """A superuser row slipped into the archive, named by nothing of the project."""
    path, _ = small
    members = read_members(path)
    set_rows(members, USER, [*rows_of(members, USER), _mallory(superuser=True)])
    _refused(write_zip(tmp_path / "evil.zip", consistent(members)),
             r"labeling\.reviewer row 9001 \(rows/labeling\.reviewer\.jsonl\) is named by no row of the project")
    assert not Reviewer.objects.filter(username="mallory").exists()


def test_a_superuser_with_a_known_password_comes_back_without_rights_or_password(small, tmp_path, client):
    """The issue's ``mallory``: a superuser and staff account with a known
    password, member of the archived project. On the old code she came back a
    superuser who could log in; now she is a plain member without a password."""
    path, _ = small
    members = read_members(path)
    set_rows(members, USER, [*rows_of(members, USER), _mallory(superuser=True)])
    set_rows(members, "labeling.membership", [*rows_of(members, "labeling.membership"), {
        "model": "labeling.membership", "pk": 9002, "fields": {"project": _pk(members, "labeling.project"),
                                                                 "reviewer": 9001, "role": "viewer"}}])
    out = _import(write_zip(tmp_path / "mallory.zip", consistent(members)))

    mallory = Reviewer.objects.get(username="mallory")
    assert (mallory.is_superuser, mallory.is_staff, mallory.has_usable_password()) == (False, False, False)
    assert not mallory.check_password("known-pw-9")
    assert not client.login(username="mallory", password="known-pw-9")
    assert Membership.objects.get(reviewer=mallory).project.slug == "small"
    assert "Created accounts (without passwords: set one with `manage.py changepassword NAME`, no staff or " \
           "superuser rights): mallory" in out


def test_keep_options_give_new_accounts_their_archived_rights_and_password(small, tmp_path, client):
    path, _ = small
    members = read_members(path)
    set_rows(members, USER, [*rows_of(members, USER), _mallory(superuser=True)])
    set_rows(members, "labeling.membership", [*rows_of(members, "labeling.membership"), {
        "model": "labeling.membership", "pk": 9002, "fields": {"project": _pk(members, "labeling.project"),
                                                                 "reviewer": 9001, "role": "lead"}}])
    _import(write_zip(tmp_path / "mallory.zip", consistent(members)), "--keep-account-rights", "--keep-passwords")

    mallory = Reviewer.objects.get(username="mallory")
    assert (mallory.is_superuser, mallory.is_staff) == (True, True)
    assert client.login(username="mallory", password="known-pw-9")


def test_only_passwords_kept_gives_no_rights(small, tmp_path):
    path, _ = small
    members = read_members(path)
    set_rows(members, USER, [*rows_of(members, USER), _mallory(superuser=True)])
    set_rows(members, "labeling.membership", [*rows_of(members, "labeling.membership"), {
        "model": "labeling.membership", "pk": 9002, "fields": {"project": _pk(members, "labeling.project"),
                                                                 "reviewer": 9001, "role": "lead"}}])
    _import(write_zip(tmp_path / "mallory.zip", consistent(members)), "--keep-passwords")
    mallory = Reviewer.objects.get(username="mallory")
    assert (mallory.is_superuser, mallory.is_staff, mallory.check_password("known-pw-9")) == (False, False, True)


def test_existing_accounts_are_matched_by_login_name_and_never_changed(small, tmp_path):
    """``small-ann`` exists here, viewer of ``other``. The archive spells her
    name in fullwidth letters (the login form's normal form is ``small-ann``)
    and says she is a superuser and staff with another password and email.
    Even with both keep options the restore maps her rows to her account and
    changes nothing of it: fields, password, her role in ``other``."""
    path, other = small
    ann = Reviewer.objects.get(username="small-ann")
    membership_set(project=other, reviewer=ann, role=Role.VIEWER)
    before = model_to_dict(ann)
    members = read_members(path)
    reviewers = rows_of(members, USER)
    row = next(r for r in reviewers if r["fields"]["username"] == "small-ann")
    row["fields"].update(username="ｓｍａｌｌ－ａｎｎ", is_superuser=True, is_staff=True, email="x@evil.example",
                         password=make_password("known-pw-9"))
    set_rows(members, USER, reviewers)

    out = _import(write_zip(tmp_path / "ann.zip", consistent(members)), "--keep-account-rights", "--keep-passwords")

    assert model_to_dict(Reviewer.objects.get(pk=ann.pk)) == before
    assert Reviewer.objects.get(pk=ann.pk).check_password("pw-for-tests-1")
    assert Membership.objects.get(project=other, reviewer=ann).role == Role.VIEWER
    assert Membership.objects.get(project__slug="small", reviewer=ann).role == Role.REVIEWER
    # Her two labels (the first one replaced) are on her account.
    assert Label.objects.filter(claim__answer__run__project__slug="small", reviewer=ann).count() == 2
    assert "Used existing accounts (unchanged): small-lead, small-ann, small-judge" in out


def test_two_archived_reviewers_with_one_login_name_are_refused(small, tmp_path):
    path, _ = small
    members = read_members(path)
    reviewers = rows_of(members, USER)
    lead = next(r for r in reviewers if r["fields"]["username"] == "small-lead")
    ann = next(r for r in reviewers if r["fields"]["username"] == "small-ann")
    ann["fields"]["username"] = "small-lead\u200b"  # a zero-width space: the same login name once normalized
    set_rows(members, USER, reviewers)
    _refused(write_zip(tmp_path / "twins.zip", consistent(members)),
             rf"labeling\.reviewer row {ann['pk']} \(rows/labeling\.reviewer\.jsonl line \d\), field username: "
             rf"'small-lead' is also the login name of row {lead['pk']} once normalized")


def test_a_genuine_backup_from_another_instance_brings_no_superuser_back(settings, tmp_path):
    """Instance A: ``small-lead`` is a superuser and staff. Its backup is
    restored on instance B, which has none of its accounts (here: the project
    and its accounts deleted, a fresh storage). On the old code the lead came
    back a superuser with A's password; now every account the restore creates
    is a plain account without a password, and the project is whole."""
    settings.MEDIA_ROOT = tmp_path / "media-a"
    project = build_project("small")
    Reviewer.objects.filter(username="small-lead").update(is_superuser=True, is_staff=True)
    path = tmp_path / "small.zip"
    call_command("export_project", "small", str(path), stdout=io.StringIO())
    counts = model_counts()
    _delete(project)
    Reviewer.objects.filter(username__startswith="small-").delete()
    settings.MEDIA_ROOT = tmp_path / "media-b"

    out = _import(path)

    assert model_counts() == counts
    created = Reviewer.objects.filter(username__startswith="small-").order_by("username")
    assert [(r.username, r.is_superuser, r.is_staff, r.has_usable_password()) for r in created] == [
        ("small-ann", False, False, False), ("small-judge", False, False, False),
        ("small-lead", False, False, False)]
    assert Membership.objects.get(reviewer__username="small-lead").role == Role.LEAD
    version = LabelTableVersion.objects.get(run__project__slug="small")
    assert version_read(version)  # reads back and verifies its SHA-256
    assert "superuser rights): small-lead, small-ann, small-judge" in out


def test_a_version_file_outside_the_project_is_refused(small, tmp_path):
    """A version row naming ``other``'s version file (which the storage holds):
    restored, ``small``'s leads would download ``other``'s label table."""
    path, other = small
    members = read_members(path)
    foreign = LabelTableVersion.objects.get(run__project=other).file.name
    versions = rows_of(members, "labeling.labeltableversion")
    versions[0]["fields"]["file"] = foreign
    set_rows(members, "labeling.labeltableversion", versions)
    _refused(write_zip(tmp_path / "evil.zip", consistent(members)),
             rf"labeling\.labeltableversion row {versions[0]['pk']} \(rows/labeling\.labeltableversion\.jsonl "
             rf"line 1\), field file: file '{foreign}' is not one of the archive's files in the project's folder "
             "'label_tables/small/'")
    # The same with the file inside the archive: still outside the project's folder.
    members[f"files/{foreign}"] = b"{}\n"
    _refused(write_zip(tmp_path / "evil2.zip", consistent(members)), "is not one of the archive's files in the "
                                                                      "project's folder 'label_tables/small/'")


def test_an_archive_file_no_row_names_is_refused(small, tmp_path):
    path, _ = small
    members = read_members(path)
    members["files/label_tables/small/extra.jsonl"] = b"{}\n"
    _refused(write_zip(tmp_path / "extra.zip", consistent(members)),
             "files/label_tables/small/extra.jsonl is named by no row of the project")
