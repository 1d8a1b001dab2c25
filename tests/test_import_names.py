"""What an answers file (or a command, or the admin) may name and write:
names and slugs every page can address, question texts other runs rely on,
labels that never speak for a login, the review page's limits, one normal
form for look-alike ids (labeling.names, labeling.importers.load)."""

from __future__ import annotations

import csv
import io
import json
import unicodedata

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse
from openpyxl import Workbook

from labeling.importers.load import project_for_import, run_import
from labeling.importers.records import ImportFailed
from labeling.models import Label, Project, Question, Reviewer, Run
from labeling.tables.versions import label_table_snapshot
from tests.factories import ProjectFactory
from tests.test_import_answers import answer_row, jsonl


def issues_of(failure: pytest.ExceptionInfo) -> list[tuple[int, str, str]]:
    return [(i.line, i.field, i.reason) for i in failure.value.issues]


def csv_bytes(rows: list[list[object]]) -> bytes:
    out = io.StringIO()
    csv.writer(out).writerows(rows)
    return out.getvalue().encode()


TABLE_HEADER = ["question_id", "question", "run", "answer", "passages", "claim", "citations", "label",
                "justification"]
PASSAGES = json.dumps([{"id": "P1", "source": "manual.md", "text": "The client retries five times."}])


def table_row(claim: str = "It retries five times.", **cells: object) -> list[object]:
    values = {"question_id": "q1", "question": "How?", "run": "r1", "answer": "It retries five times [P1].",
              "passages": PASSAGES, "claim": claim, "citations": "P1", "label": "", "justification": ""}
    values.update(cells)
    return [values[name] for name in TABLE_HEADER]


# ----------------------------------------------------------- names and slugs


@pytest.mark.django_db
def test_run_name_with_a_slash_is_refused_naming_line_and_field():
    """On main the run was created and its project page answered 500 (the
    run URL cannot hold a '/')."""
    project = ProjectFactory(slug="p")
    with pytest.raises(ImportFailed) as failure:
        run_import(project=project, source=jsonl(answer_row(run="gpt4o/prompt-v2")))
    assert issues_of(failure) == [(1, "run", (
        "the run name 'gpt4o/prompt-v2' contains '/' or '\\': a run name is one part of the run's address; "
        "use '-' instead, e.g. 'gpt4o-prompt-v2'"))]
    assert not Run.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize("name", [".", "..", "a\nb", "a\x00b"])
def test_run_names_that_read_as_paths_or_hold_controls_are_refused(name):
    project = ProjectFactory(slug="p")
    with pytest.raises(ImportFailed) as failure:
        run_import(project=project, source=jsonl(answer_row(run=name)))
    assert [(i.line, i.field) for i in failure.value.issues] == [(1, "run")]
    assert not Run.objects.exists()


@pytest.mark.django_db
def test_run_option_with_a_slash_is_a_command_error(tmp_path):
    path = tmp_path / "answers.jsonl"
    path.write_bytes(jsonl(answer_row()).getvalue())
    with pytest.raises(CommandError, match="contains '/'"):
        call_command("import_answers", str(path), project="p", run="a/b")
    assert not Project.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize(("slug", "reason"), [
    ("bad slug/<b>", "the project slug 'bad slug/<b>' may hold only ASCII letters, digits, '-' and '_'"),
    ("ünïcode", "the project slug 'ünïcode' may hold only ASCII letters, digits, '-' and '_'"),
    ("s" * 65, "the project slug is 65 characters long; the limit is 64"),
])
def test_import_answers_refuses_a_slug_no_url_can_hold(tmp_path, slug, reason):
    """On main the first two were accepted (then '/' answered 500) and the
    third was an unhandled database error on PostgreSQL."""
    path = tmp_path / "answers.jsonl"
    path.write_bytes(jsonl(answer_row()).getvalue())
    with pytest.raises(CommandError) as failure:
        call_command("import_answers", str(path), project=slug)
    assert str(failure.value) == reason
    assert not Project.objects.exists() and not Run.objects.exists()


@pytest.mark.django_db
def test_fullwidth_slug_is_stored_in_its_ascii_form():
    assert project_for_import(slug="ｄｅｍｏ").slug == "demo"


@pytest.mark.django_db
def test_admin_refuses_a_run_name_with_a_slash(admin_client):
    project = ProjectFactory(slug="p")
    response = admin_client.post(reverse("admin:labeling_run_add"),
                                 {"project": project.pk, "name": "gpt4o/prompt-v2", "metadata": "{}"})
    assert response.status_code == 200
    assert "contains &#x27;/&#x27; or &#x27;\\&#x27;" in response.content.decode()
    assert not Run.objects.exists()
    # gold_rate: the form's initial value, which the browser posts back (SPEC §4.4's run settings).
    response = admin_client.post(reverse("admin:labeling_run_add"),
                                 {"project": project.pk, "name": "gpt4o-prompt-v2", "metadata": "{}",
                                  "gold_rate": "0.05"})
    assert response.status_code == 302
    assert list(Run.objects.values_list("name", flat=True)) == ["gpt4o-prompt-v2"]


@pytest.mark.django_db
def test_admin_refuses_a_slug_no_url_can_hold(admin_client):
    response = admin_client.post(reverse("admin:labeling_project_add"), {"slug": "ünïcode", "name": "U"})
    assert response.status_code == 200
    assert not Project.objects.exists()


@pytest.mark.django_db
def test_a_64_character_slug_can_be_snapshotted(settings, tmp_path):
    """label_tables/<64>/run-<id>/v1-<12 hex>.jsonl is 104 characters plus the
    run id's digits: on main the file name overflowed the 100-character column
    and no version could be saved."""
    settings.MEDIA_ROOT = tmp_path / "media"
    project = project_for_import(slug="s" * 64)
    run_import(project=project, source=jsonl(answer_row()))
    run = Run.objects.get()
    version = label_table_snapshot(run=run, note="first")
    assert version.number == 1
    assert version.file.name.startswith(f"label_tables/{'s' * 64}/run-{run.pk}/v1-")
    assert len(version.file.name) == 104 + len(str(run.pk)) > 100
    assert version.file.read().count(b"\n") == 2


# --------------------------------------------------- question text of all runs


@pytest.mark.django_db
def test_other_question_text_for_a_stored_question_id_is_refused_with_both_texts():
    """On main run B's file rewrote q1's text for run A too."""
    project = ProjectFactory(slug="p")
    run_import(project=project, source=jsonl(answer_row(run="A", question="How does sync fail?")))
    with pytest.raises(ImportFailed) as failure:
        run_import(project=project, source=jsonl(answer_row(run="B", question="How does sync recover?")))
    assert issues_of(failure) == [(1, "question", (
        "question 'q1' is stored with the text 'How does sync fail?', this line gives 'How does sync recover?': "
        "a question's text is shared by every run of the project, so use the stored text, or give the question "
        "another question_id"))]
    assert list(Question.objects.values_list("text", flat=True)) == ["How does sync fail?"]
    assert list(Run.objects.values_list("name", flat=True)) == ["A"]


@pytest.mark.django_db
def test_two_texts_for_one_question_in_one_file_are_refused():
    project = ProjectFactory(slug="p")
    with pytest.raises(ImportFailed) as failure:
        run_import(project=project, source=jsonl(answer_row(run="A", question="One?"),
                                                 answer_row(run="B", question="Two?")))
    assert issues_of(failure) == [(2, "question", "question 'q1' has the text 'Two?' here but 'One?' on line 1: "
                                                  "one question has one text")]
    assert not Question.objects.exists()


@pytest.mark.django_db
def test_same_question_text_in_a_second_run_imports():
    project = ProjectFactory(slug="p")
    run_import(project=project, source=jsonl(answer_row(run="A")))
    report = run_import(project=project, source=jsonl(answer_row(run="B", answerable=True)))
    assert report.answers_created == 1 and Question.objects.get().answerable is True


# ------------------------------------------------- labels never speak for a login


def labeled_row(reviewer: str) -> dict:
    row = answer_row()
    row["claims"][0].update(label="SUPPORTED", justification="", reviewer=reviewer)
    return row


@pytest.mark.django_db
def test_file_label_by_admin_goes_to_an_imported_reviewer_not_the_superuser(admin_user):
    """On main the label was credited to the superuser ``admin``."""
    project = ProjectFactory(slug="p")
    run_import(project=project, source=jsonl(labeled_row("admin")))
    imported = Reviewer.objects.get(username="admin@imported")
    assert (imported.kind, imported.has_usable_password()) == ("external", False)
    assert Label.objects.filter(reviewer=admin_user).count() == 0
    assert list(Label.objects.values_list("reviewer__username", flat=True)) == ["admin@imported"]


@pytest.mark.django_db
def test_imported_reviewer_is_reused_and_default_reviewer_never_a_login(admin_user, tmp_path):
    project = ProjectFactory(slug="p")
    run_import(project=project, source=jsonl(labeled_row("expert-1")))
    run_import(project=project, source=jsonl(labeled_row("expert-1") | {"run": "r2"}))
    row = answer_row(run="r3")
    row["claims"][0].update(label="SUPPORTED")
    path = tmp_path / "answers.jsonl"
    path.write_bytes(jsonl(row).getvalue())
    call_command("import_answers", str(path), project="p", reviewer="admin")
    assert dict(Reviewer.objects.filter(kind="external").values_list("username", "is_superuser")) == {
        "expert-1": False, "admin@imported": False}
    assert Label.objects.filter(reviewer__username="expert-1").count() == 2
    assert Label.objects.filter(reviewer=admin_user).count() == 0


@pytest.mark.django_db
def test_expertqa_unsupported_labels_without_justification_are_kept_as_imported(expertqa_project):
    """The experts left 124 UNSUPPORTED labels without a justification
    (templates/docs/names.md): kept, credited to the external reviewer."""
    bare = Label.objects.filter(value="UNSUPPORTED", justification="")
    assert bare.count() == 124
    assert set(bare.values_list("reviewer__username", "reviewer__kind")) == {("expertqa-annotator", "external")}


# ----------------------------------------------------- the review page's limits


@pytest.mark.django_db
def test_justification_longer_than_the_review_page_allows_is_refused():
    """On main a 2,000,000-character justification was imported."""
    row = answer_row()
    row["claims"][0].update(label="UNSUPPORTED", justification="x" * 2_000_000)
    with pytest.raises(ImportFailed) as failure:
        run_import(project=ProjectFactory(slug="p"), source=jsonl(row))
    assert issues_of(failure) == [(1, "claims[0].justification",
                                   "2,000,000 characters long; the limit is 10,000 (as in the review page)")]


@pytest.mark.django_db
def test_duplicate_csv_rows_are_refused_with_both_row_numbers():
    """On main the repeated row became a second, identical claim."""
    data = csv_bytes([TABLE_HEADER, table_row(), table_row()])
    with pytest.raises(ImportFailed) as failure:
        run_import(project=ProjectFactory(slug="p"), source=data, format="csv")
    assert issues_of(failure) == [(3, "claim", "row 3 repeats row 2 of the same answer cell for cell: "
                                               "remove one of them")]


@pytest.mark.django_db
def test_look_alike_ids_are_one_question_and_one_run():
    """NFC/NFD, a zero-width space and fullwidth letters: on main four
    questions and three runs; now one of each (the second line is the same
    answer again, a no-op)."""
    project = ProjectFactory(slug="p")
    nfc, nfd = unicodedata.normalize("NFC", "café"), unicodedata.normalize("NFD", "café")
    run_import(project=project, source=jsonl(answer_row(question_id=nfc, run="gpt4")))
    report = run_import(project=project, source=jsonl(answer_row(question_id=nfd, run="gpt\u200b4")))
    report2 = run_import(project=project, source=jsonl(answer_row(question_id="ｃａｆé", run="ｇｐｔ４")))
    assert (report.answers_unchanged, report2.answers_unchanged) == (1, 1)
    assert list(Question.objects.values_list("question_id", flat=True)) == [nfc]
    assert list(Run.objects.values_list("name", flat=True)) == ["gpt4"]


@pytest.mark.django_db
def test_add_reviewer_with_fullwidth_name_can_log_in(client):
    """On main the account was named ｒｅｖ０１ and the login form (which
    applies NFKC) looked for rev01: it could never log in."""
    call_command("add_reviewer", "ｒｅｖ０１", password="a-long-pass-phrase-1", stdout=io.StringIO())
    assert list(Reviewer.objects.values_list("username", flat=True)) == ["rev01"]
    for typed in ("rev01", "ｒｅｖ０１", "rev\u200b01"):
        response = client.post(reverse("login"), {"username": typed, "password": "a-long-pass-phrase-1"})
        assert response.status_code == 302, typed
        client.logout()


@pytest.mark.django_db
def test_add_reviewer_taken_after_normalizing_is_refused():
    call_command("add_reviewer", "rev01", password="a-long-pass-phrase-1", stdout=io.StringIO())
    with pytest.raises(CommandError, match="Reviewer 'rev01' already exists"):
        call_command("add_reviewer", "ｒｅｖ０１", password="a-long-pass-phrase-1", stdout=io.StringIO())


# -------------------------------------------- bytes a file can hold, a row cannot


@pytest.mark.django_db
def test_oversized_answers_csv_cell_is_one_issue_naming_the_row():
    """On main csv.Error ("field larger than field limit") escaped as a traceback."""
    data = csv_bytes([TABLE_HEADER, table_row()]) + b'q2,"' + b"x" * 1_000_001 + b'",r1,a,[],c,,,\n'
    with pytest.raises(ImportFailed) as failure:
        run_import(project=ProjectFactory(slug="p"), source=data, format="csv")
    assert issues_of(failure) == [(3, "(file)", "a cell is longer than 1,000,000 characters")]


@pytest.mark.django_db
def test_header_only_answers_csv_is_refused():
    with pytest.raises(ImportFailed) as failure:
        run_import(project=ProjectFactory(slug="p"), source=csv_bytes([TABLE_HEADER]), format="csv")
    assert issues_of(failure) == [(1, "(file)", "the file has no rows below the header")]


@pytest.mark.django_db
def test_nul_in_an_answers_csv_cell_is_refused_naming_row_and_column():
    data = csv_bytes([TABLE_HEADER, table_row(), table_row("It logs\x00 runs.")])
    with pytest.raises(ImportFailed) as failure:
        run_import(project=ProjectFactory(slug="p"), source=data, format="csv")
    assert issues_of(failure) == [(3, "claim", "contains the control character U+0000 at character 8, "
                                               "which cannot be stored: remove it")]
    assert not Run.objects.exists()


def xlsx_bytes(rows: list[list[object]]) -> bytes:
    workbook = Workbook()
    for row in rows:
        workbook.active.append(row)
    out = io.BytesIO()
    workbook.save(out)
    return out.getvalue()


@pytest.mark.django_db
@pytest.mark.parametrize(("escape", "reason"), [
    ("_x0000_", "contains the control character U+0000 at character 8, which cannot be stored: remove it"),
    ("_x000B_", "contains the control character U+000B at character 8, which cannot be stored: remove it"),
    ("_xD800_", "contains a lone surrogate U+D800 at character 8 (not a character): fix the file's encoding"),
])
def test_xlsx_escapes_of_characters_no_row_can_hold_are_refused(escape, reason):
    """Excel writes a control character as ``_xHHHH_``: on main the escape
    text was stored as it was (or, for NUL, failed on PostgreSQL)."""
    data = xlsx_bytes([TABLE_HEADER, table_row(f"It logs{escape} runs.")])
    with pytest.raises(ImportFailed) as failure:
        run_import(project=ProjectFactory(slug="p"), source=data, format="xlsx")
    assert issues_of(failure) == [(2, "claim", reason)]


@pytest.mark.django_db
def test_escaped_underscore_in_xlsx_reads_as_excel_shows_it():
    data = xlsx_bytes([TABLE_HEADER, table_row("Flag _x005F_x0041_ stays.")])
    run_import(project=ProjectFactory(slug="p"), source=data, format="xlsx")
    assert Run.objects.get().answers.get().claims.get().text == "Flag _x0041_ stays."


def test_run_name_rules_name_the_reason():
    from labeling.names import validate_run_name

    with pytest.raises(ValidationError, match="look-alike or invisible characters: write it as 'v2'"):
        validate_run_name("v\u200b2")


@pytest.mark.django_db
def test_commands_find_a_run_typed_in_a_look_alike_spelling():
    from labeling.management.lookup import find_project, find_run

    project = ProjectFactory(slug="demo")
    run_import(project=project, source=jsonl(answer_row(run="gpt4")))
    assert find_run(find_project("ｄｅｍｏ"), "ｇｐｔ\u200b４").name == "gpt4"


def test_label_table_justification_has_the_review_page_limit():
    """On main a label table carried justifications up to 100,000 characters
    past the review page's 10,000."""
    from labeling.importers.label_table import read_label_table

    data = csv_bytes([["claim_id", "label", "justification"], [1, "UNSUPPORTED", "x" * 10_000],
                      [2, "UNSUPPORTED", "x" * 10_001]])
    table_file = read_label_table(data, format="csv")
    assert [row.claim_id for row in table_file.rows] == [1]
    assert [(i.line, i.field, i.reason) for i in table_file.issues] == [
        (3, "justification", "10,001 characters long; the limit is 10,000 (as in the review page)")]
