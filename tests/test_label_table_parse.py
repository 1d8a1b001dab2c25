"""Reading a label table file and checking its rows (labeling.importers.label_table,
``label_table_import_preview``): every bad row reported with its row, column and
reason, never a crash, on hostile and damaged files too."""

from __future__ import annotations

import csv
import io
import json

import pytest

from labeling.importers.label_table import read_label_table
from labeling.models import Claim, Label
from labeling.review.claim_edits import claim_edit
from labeling.tables.label_import import LabelImportError, label_table_import_apply
from tests.factories import ClaimFactory, RunFactory
from tests.label_table_files import (
    claim_ids,
    csv_bytes,
    damaged_xlsx,
    edit_file,
    empty_xlsx,
    export,
    header_only_xlsx,
    import_seed_run,
    import_url,
    preview_of,
    upload,
)


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path):
    """Uploads and version files in the test's own folder."""
    settings.MEDIA_ROOT = tmp_path / "media"


@pytest.fixture
def seed_run(db):
    """The seed run (tests/label_table_files.py): claims 1–5 labeled by seed-reviewer, claim 6 uncited."""
    return import_seed_run()


@pytest.fixture
def alice(seed_run, reviewer):
    """``alice``, a member of the seed run's project, with no label yet (a reviewer, not a client)."""
    seed_run.project.members.add(reviewer)
    return reviewer



def test_every_bad_row_is_reported_with_row_column_and_reason(seed_run, alice):
    ids = claim_ids(seed_run)
    elsewhere = ClaimFactory(answer__run=RunFactory(name="other-run", project__slug="elsewhere"), index=1)
    header = ["run", "claim_id", "question_id", "claim_index", "claim", "claim_revision", "label", "justification"]
    text = {i: c for i, c in Claim.objects.filter(answer__run=seed_run).values_list("index", "text")}
    run, q = seed_run.name, "seed-support-1"
    rows = [
        [run, ids[1], q, 1, text[1], 1, "UNSUPPORTED", "P1 is silent on this"],   # 2: good
        [run, 999999, q, 1, "", "", "SUPPORTED", ""],                            # 3: unknown claim
        [run, elsewhere.pk, q, 1, "", "", "SUPPORTED", ""],                      # 4: other run's claim
        [run, ids[2], q, 2, "The wait grows.", 1, "SUPPORTED", ""],               # 5: claim text changed
        [run, ids[3], q, 3, text[3], 1, "MAYBE", ""],                            # 6: invalid label
        [run, ids[4], q, 4, text[4], 1, "UNCITED", ""],                          # 7: UNCITED on a cited claim
        [run, ids[6], q, 6, text[6], 1, "SUPPORTED", "x"],                       # 8: SUPPORTED, uncited claim
        [run, ids[5], q, 5, text[5], 1, "UNSUPPORTED", ""],                      # 9: justification missing
        [run, ids[1], q, 1, text[1], 1, "SUPPORTED", ""],                        # 10: claim 1 twice
        ["other-run", ids[2], q, 2, text[2], 1, "SUPPORTED", ""],                # 11: another run's row
        [run, ids[3], q, 3, text[3], 7, "SUPPORTED", ""],                        # 12: revision moved
        [run, "", q, "x", "", "", "SUPPORTED", ""],                              # 13: bad claim_index
    ]
    out = io.StringIO()
    csv.writer(out).writerows([header, *rows])

    preview = preview_of(seed_run, alice, out.getvalue().encode(), "csv")

    assert [(issue.line, issue.field) for issue in preview.issues] == [
        (3, "claim_id"), (4, "claim_id"), (5, "claim"), (6, "label"), (7, "label"), (8, "label"),
        (9, "justification"), (10, "claim_id"), (11, "run"), (12, "claim_revision"), (13, "claim_index")]
    reasons = [issue.reason for issue in preview.issues]
    assert reasons[0] == "claim 999999 is not part of this run"
    assert reasons[1] == f"claim {elsewhere.pk} is not part of this run"
    assert reasons[2].startswith("the claim text differs from the stored claim")
    assert reasons[3].startswith("unknown label 'MAYBE'")
    assert reasons[4] == "UNCITED on a claim with 1 citation(s): a cited claim is SUPPORTED or UNSUPPORTED"
    assert reasons[5] == "SUPPORTED on a claim without citations: a claim that cites nothing is UNCITED automatically"
    assert reasons[6] == "a justification is required for UNSUPPORTED"
    assert reasons[7] == f"claim {ids[1]} is also on row 2"
    assert reasons[8] == "the row is for run 'other-run', not 'seed-coverage-support'"
    assert reasons[9].startswith("the claim changed since this file was exported (revision 7 → 1")
    assert reasons[10] == "expected a whole number, got 'x'"
    assert [c.line for c in preview.changes] == [2]
    # Every row below the header is counted once: 1 change + 0 unchanged + 0 blank
    # + 11 refused rows (row 6 and row 13 were refused while reading) = 12 rows.
    assert preview.rows == 12 == len(rows)
    assert preview.rows == len(preview.changes) + preview.unchanged + preview.blank + len(preview.issues)


def test_project_setting_requires_a_justification_for_supported(seed_run, alice):
    seed_run.project.require_justification_for_supported = True
    seed_run.project.save()
    edited = edit_file(export(seed_run, "csv", reviewer="alice"), "csv", {3: ("SUPPORTED", "")})

    preview = preview_of(seed_run, alice, edited, "csv")

    assert [(i.line, i.field, i.reason) for i in preview.issues] == [
        (4, "justification", "a justification is required for SUPPORTED in this project")]


def test_claim_edited_since_export_is_a_bad_row(seed_run, alice):
    exported = export(seed_run, "xlsx", reviewer="alice")
    claim_edit(claim=Claim.objects.get(answer__run=seed_run, index=2), text="The wait doubles each time.")
    edited = edit_file(exported, "xlsx", {2: ("SUPPORTED", "ok")})

    preview = preview_of(seed_run, alice, edited, "xlsx")

    assert [(i.line, i.field) for i in preview.issues] == [(3, "claim_revision")]
    assert "revision 1 → 2" in preview.issues[0].reason


def test_unreadable_files_are_reported_not_raised():
    assert [str(i) for i in read_label_table(b"not a zip", format="xlsx").issues] == [
        "line 1: (file): not an .xlsx workbook: the file is plain text (a CSV file? name it .csv)"]
    assert read_label_table(b"claim,text\n1,2\n", format="csv").issues[0].reason.startswith("no 'label' column")
    assert read_label_table(b"\xff\xfe", format="csv").issues[0].field == "(file)"


def test_claim_outside_the_run_is_reported_without_naming_other_runs_or_projects(client, seed_run, alice):
    """Row 2 names a claim of project 'other' (run 'r'), row 3 an id no
    claim has: both read the same, so the upload tells nothing about the
    rest of the database."""
    foreign = ClaimFactory(answer__run=RunFactory(name="r", project__slug="other"), index=1)
    data = csv_bytes([["claim_id", "label", "justification"], [foreign.pk, "SUPPORTED", "x"],
                      [999999, "SUPPORTED", "x"]])
    client.force_login(alice)

    page = client.post(import_url(seed_run), {"file": upload(data, "mine.csv")}).content.decode()

    preview = preview_of(seed_run, alice, data, "csv")
    assert [(i.line, i.field, i.reason) for i in preview.issues] == [
        (2, "claim_id", f"claim {foreign.pk} is not part of this run"),
        (3, "claim_id", "claim 999999 is not part of this run")]
    assert f"claim {foreign.pk} is not part of this run" in page
    assert "&#x27;other&#x27;" not in page and "&#x27;r&#x27;" not in page and "of project" not in page


def test_damaged_worksheet_in_a_real_xlsx_is_a_file_problem_not_a_crash(client, seed_run, alice):
    data = damaged_xlsx(export(seed_run, "xlsx", reviewer="alice"))
    client.force_login(alice)

    table_file = read_label_table(data, format="xlsx")
    response = client.post(import_url(seed_run), {"file": upload(data, "mine.xlsx")})

    assert [(i.field, i.reason) for i in table_file.issues] == [
        ("(file)", "the worksheet 'Labels' is damaged and cannot be read (ParseError): open the file in a "
                   "spreadsheet program and save it again")]
    assert response.status_code == 200
    page = response.content.decode()
    assert "the worksheet &#x27;Labels&#x27; is damaged and cannot be read" in page
    assert 'name="token"' not in page


@pytest.mark.parametrize(("value", "reason"), [
    ("99999999999999999999999999", "expected a whole number from 0 to 9223372036854775807, "
                                   "got 99999999999999999999999999"),
    ("9223372036854775808", "expected a whole number from 0 to 9223372036854775807, got 9223372036854775808"),
    ("²", "expected a whole number, got '²'"),
    ("1" * 5000, "expected a whole number from 0 to 9223372036854775807, got 11111111111111111111… (5000 digits)"),
])
def test_claim_id_outside_the_64_bit_range_is_a_bad_row_not_a_crash(client, seed_run, alice, value, reason):
    data = csv_bytes([["claim_id", "label", "justification"], [value, "SUPPORTED", "x"]])
    client.force_login(alice)
    before = Label.objects.count()

    response = client.post(import_url(seed_run), {"file": upload(data, "mine.csv")})

    assert response.status_code == 200
    assert [(i.line, i.field, i.reason) for i in preview_of(seed_run, alice, data, "csv").issues] == [
        (2, "claim_id", reason)]
    assert Label.objects.count() == before


def test_largest_64_bit_claim_id_is_read_as_a_number():
    data = csv_bytes([["claim_id", "label"], [2**63 - 1, "SUPPORTED"]])
    table_file = read_label_table(data, format="csv")
    assert table_file.issues == [] and table_file.rows[0].claim_id == 9223372036854775807


def test_nul_character_in_a_text_cell_is_a_bad_row(seed_run, alice):
    """Text with U+0000 cannot be stored by PostgreSQL: the row is refused at
    preview and the apply writes nothing (on SQLite and PostgreSQL alike)."""
    ids = claim_ids(seed_run)
    data = csv_bytes([["claim_id", "label", "justification", "reviewer"],
                      [ids[1], "UNSUPPORTED", "silent\x00on this", ""],
                      [ids[2], "UNSUPPORTED", "fine", "ali\x00ce"],
                      [ids[3], "SUPPORTED", "fine", ""]])
    before = Label.objects.count()

    preview = preview_of(seed_run, alice, data, "csv")
    with pytest.raises(LabelImportError) as failure:
        label_table_import_apply(run=seed_run, reviewer=alice, table_file=read_label_table(data, format="csv"))

    assert [(i.line, i.field, i.reason) for i in preview.issues] == [
        (2, "justification", "contains the control character U+0000 at character 7, which cannot be stored: "
                             "remove it"),
        (3, "reviewer", "contains the control character U+0000 at character 4, which cannot be stored: remove it")]
    assert [(i.line, i.field) for i in failure.value.issues] == [(2, "justification"), (3, "reviewer")]
    assert Label.objects.count() == before


def test_nul_character_in_a_jsonl_key_value_is_a_bad_row(seed_run, alice):
    ids = claim_ids(seed_run)
    data = (json.dumps({"claim_id": ids[1], "label": "SUPPORTED", "justification": "ok"}) + "\n"
            + json.dumps({"claim_id": ids[3], "label": "SUPPORTED", "claim": "a\x00b"}) + "\n").encode()
    assert [(i.line, i.field) for i in read_label_table(data, format="jsonl").issues] == [(2, "claim")]


def test_deeply_nested_json_line_is_reported_as_invalid_json():
    """100 000 '[' on line 2 would exhaust the recursion limit; a number of
    5000 digits on line 3 exceeds Python's int conversion limit: both lines
    are reported, line 1 is read."""
    data = (b'{"claim_id": 1, "label": "SUPPORTED"}\n'
            + b'{"claim_id": ' + b"[" * 100_000 + b"\n"
            + b'{"claim_id": ' + b"1" * 5000 + b', "label": "SUPPORTED"}\n')

    table_file = read_label_table(data, format="jsonl")

    assert [(i.line, i.field, i.reason) for i in table_file.issues] == [
        (2, "(line)", "invalid JSON: nested too deeply"),
        (3, "(line)", "invalid JSON: a number has too many digits")]
    assert [row.claim_id for row in table_file.rows] == [1]
    first = read_label_table(b"[" * 100_000, format="jsonl")
    assert [(i.line, i.field, i.reason) for i in first.issues] == [(1, "(line)", "invalid JSON: nested too deeply")]


def test_csv_cell_over_the_csv_field_limit_is_a_file_problem():
    """Cells up to 1,000,000 characters are read (a 200,000-character
    justification is then refused by the review page's own 10,000 limit);
    a longer cell is one (file) issue naming its row."""
    data = b"claim_id,label,justification\n1,SUPPORTED,ok\n2,SUPPORTED," + b"x" * 200_000 + b"\n"
    assert [(i.line, i.field, i.reason) for i in read_label_table(data, format="csv").issues] == [
        (3, "justification", "200,000 characters long; the limit is 10,000 (as in the review page)")]
    data = b"claim_id,label,justification\n1,SUPPORTED,ok\n2,SUPPORTED," + b"x" * 1_000_001 + b"\n"
    assert [(i.line, i.field, i.reason) for i in read_label_table(data, format="csv").issues] == [
        (3, "(file)", "a cell is longer than 1,000,000 characters")]


@pytest.mark.parametrize(("data", "fmt", "reason"), [
    (b"", "csv", "the file has no rows: it is empty"),
    (b"\r\n\r\n", "csv", "the file has no rows: it is empty"),
    (b"\xef\xbb\xbf", "csv", "the file has no rows: it is empty"),
    (b"claim_id,label,justification\r\n", "csv", "the file has no rows below the header"),
    (b"claim_id,label,justification\r\n,,\r\n", "csv", "the file has no rows below the header"),
    (b"", "jsonl", "the file has no rows: it is empty"),
    (b"\n  \n", "jsonl", "the file has no rows: it is empty"),
    (None, "xlsx-empty", "the file has no rows: it is empty"),
    (None, "xlsx-header", "the file has no rows below the header"),
])
def test_empty_or_header_only_file_says_it_has_no_rows(data, fmt, reason):
    if fmt == "xlsx-empty":
        data, fmt = empty_xlsx(), "xlsx"
    elif fmt == "xlsx-header":
        data, fmt = header_only_xlsx(), "xlsx"

    table_file = read_label_table(data, format=fmt)

    assert [(i.line, i.field, i.reason) for i in table_file.issues] == [(1, "(file)", reason)]
    assert table_file.rows == []


def test_header_not_in_the_first_row_says_so_and_lists_the_columns_found():
    data = csv_bytes([["Labels of run seed-coverage-support", "", "exported 2024-05-01"],
                      [], ["claim_id", "label", "justification"], [1, "SUPPORTED", "ok"]])

    issues = read_label_table(data, format="csv").issues

    assert [(i.line, i.field, i.reason) for i in issues] == [(1, "(header)", (
        "no 'label' column in row 1: the header must be the first row of the file; row 1 holds "
        "'Labels of run seed-coverage-support', 'exported 2024-05-01'"))]


def test_missing_claim_column_lists_the_columns_found_and_jsonl_names_keys():
    csv_issue = read_label_table(b"Claim,Label\nx,SUPPORTED\n", format="csv").issues[0]
    jsonl_issue = read_label_table(b'{"text": "x", "value": "SUPPORTED"}\n', format="jsonl").issues[0]

    assert csv_issue.reason == ("needs a 'claim_id' column, or 'question_id' and 'claim_index', in row 1 (the "
                                "header must be the first row of the file); row 1 holds 'Claim', 'Label'")
    assert jsonl_issue.reason == ("no 'label' key in the object on line 1 (each line is one row of the label "
                                  "table); its keys are 'text', 'value'")
