"""Label table import: offline labeling round trip, per-row validation,
atomic apply, the upload pages, the import_labels command, and answers files
given as CSV/XLSX tables."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import time
import zipfile
from datetime import UTC, datetime

import pytest
from django.core.exceptions import ValidationError
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.core.management import CommandError, call_command
from django.urls import reverse
from openpyxl import Workbook, load_workbook

from labeling.exports.csv_jsonl import csv_cell
from labeling.exports.label_table import LABEL_TABLE_COLUMNS, label_table_frame, table_claim_metrics
from labeling.importers.label_table import read_label_table
from labeling.importers.load import run_import
from labeling.importers.records import ImportFailed
from labeling.models import Answer, Claim, Label, LabelValue, Reviewer, Run
from labeling.review.claim_edits import claim_edit
from labeling.tables.export import label_table_export
from labeling.tables.label_import import (
    NEWER_LABELS,
    LabelImportError,
    label_table_import_apply,
    label_table_import_preview,
)
from tests.conftest import FIXTURES_DIR
from tests.factories import ClaimFactory, ReviewerFactory, RunFactory

SEED = FIXTURES_DIR / "seed_coverage_support.jsonl"
HYPERLINK = '=HYPERLINK("http://x","y")'
EDITS = {  # claim index → (label, justification) typed offline
    1: ("UNSUPPORTED", HYPERLINK),
    3: ("SUPPORTED", "naïve — “quoted” ✓\nsecond line"),
    5: ("UNSUPPORTED", "'leading apostrophe"),
}


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"


@pytest.fixture
def seed_run(db):
    """Seed example (5 cited claims labeled by seed-reviewer: 1, 2, 4
    SUPPORTED, 3, 5 UNSUPPORTED) plus claim 6, which cites nothing."""
    from labeling.importers.load import project_for_import, run_import

    project = project_for_import(slug="seed")
    run_import(project=project, source=SEED)
    run = Run.objects.select_related("project").get(project=project, name="seed-coverage-support")
    ClaimFactory(answer=run.answers.get(), index=6, text="Backups are kept for a month.")
    return run


@pytest.fixture
def alice(seed_run, reviewer):
    seed_run.project.members.add(reviewer)
    return reviewer


def export(run: Run, fmt: str, **kwargs) -> bytes:
    out = io.BytesIO()
    label_table_export(run=run, fmt=fmt, out=out, **kwargs)
    return out.getvalue()


def claim_ids(run: Run) -> dict[int, int]:
    return dict(Claim.objects.filter(answer__run=run).values_list("index", "id"))


def edit_file(data: bytes, fmt: str, edits: dict[int, tuple[str, str]]) -> bytes:
    """Change label and justification of the rows of ``edits`` (by claim_index),
    the way a reviewer edits the file offline."""
    if fmt == "xlsx":
        workbook = load_workbook(io.BytesIO(data))
        sheet = workbook["Labels"]
        header = [cell.value for cell in sheet[1]]
        for row in sheet.iter_rows(min_row=2):
            index = row[header.index("claim_index")].value
            if index in edits:
                row[header.index("label")].value = edits[index][0]
                row[header.index("justification")].value = edits[index][1]
                row[header.index("justification")].data_type = "s"  # typed as text
        out = io.BytesIO()
        workbook.save(out)
        return out.getvalue()
    if fmt == "csv":
        rows = list(csv.reader(io.StringIO(data.decode("utf-8-sig"), newline="")))
        header = rows[0]
        for row in rows[1:]:
            index = int(row[header.index("claim_index")])
            if index in edits:
                row[header.index("label")] = edits[index][0]
                row[header.index("justification")] = csv_cell(edits[index][1])
        out = io.StringIO(newline="")
        csv.writer(out, lineterminator="\r\n").writerows(rows)
        return out.getvalue().encode("utf-8-sig")
    lines = [json.loads(line) for line in data.decode().splitlines()]
    for line in lines:
        if line["claim_index"] in edits:
            line["label"], line["justification"] = edits[line["claim_index"]]
    return "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines).encode()


def sheet_rows(data: bytes) -> list[dict]:
    sheet = load_workbook(io.BytesIO(data), read_only=True)["Labels"]
    rows = list(sheet.iter_rows(values_only=True))
    return [dict(zip(rows[0], row, strict=True)) for row in rows[1:]]


def preview_of(run: Run, reviewer, data: bytes, fmt: str):
    return label_table_import_preview(run=run, reviewer=reviewer, table_file=read_label_table(data, format=fmt))


# -------------------------------------------------------------- round trip


@pytest.mark.parametrize("fmt", ["xlsx", "csv", "jsonl"])
def test_untouched_export_imports_as_no_change(seed_run, fmt):
    seed_reviewer = Label.objects.filter(claim__answer__run=seed_run).first().reviewer
    preview = preview_of(seed_run, seed_reviewer, export(seed_run, fmt), fmt)

    assert preview.issues == []
    assert (preview.rows, len(preview.changes), preview.unchanged, preview.blank) == (6, 0, 6, 0)


def test_xlsx_export_holds_the_table_cell_for_cell(seed_run):
    """The workbook's Labels sheet is the label table: every value comes back
    (an empty string is an empty cell, read as None)."""
    table = label_table_frame(seed_run)
    expected = [{column: (value if value != "" else None) for column, value in row.items()}
                for row in table[list(LABEL_TABLE_COLUMNS)].to_dict("records")]

    assert sheet_rows(export(seed_run, "xlsx")) == expected


@pytest.mark.parametrize("fmt", ["xlsx", "csv", "jsonl"])
def test_round_trip_export_edit_import_loses_nothing(seed_run, alice, fmt):
    before = label_table_frame(seed_run)
    edited = edit_file(export(seed_run, fmt, reviewer=alice.username), fmt, EDITS)

    preview = label_table_import_apply(run=seed_run, reviewer=alice, table_file=read_label_table(edited, format=fmt))

    assert [(c.claim_index, c.old_label, c.new_label, c.new_justification) for c in preview.changes] == [
        (index, None, label, justification) for index, (label, justification) in EDITS.items()]
    mine = label_table_frame(seed_run, reviewer=alice.username)
    by_index = {row["claim_index"]: row for row in mine.to_dict("records")}
    for index, (label, justification) in EDITS.items():
        assert (by_index[index]["label"], by_index[index]["justification"]) == (label, justification)
        assert by_index[index]["reviewer"] == "alice"
    assert [by_index[i]["label"] for i in (2, 4, 6)] == [None, None, "UNCITED"]
    # Everything but alice's labels is as before: claims, ids, citations, revisions.
    fixed = ["claim_id", "claim_index", "claim", "citations", "cited_span", "claim_revision", "question_id"]
    assert mine[fixed].equals(before[fixed])
    # Exporting alice's table again gives back exactly what was typed.
    again = edit_file(export(seed_run, fmt, reviewer=alice.username), fmt, {})
    assert preview_of(seed_run, alice, again, fmt).changes == []
    assert preview_of(seed_run, alice, edited, fmt).changes == []


def test_reimported_xlsx_keeps_the_formula_text_as_text(seed_run, alice):
    edited = edit_file(export(seed_run, "xlsx", reviewer="alice"), "xlsx", EDITS)
    label_table_import_apply(run=seed_run, reviewer=alice, table_file=read_label_table(edited, format="xlsx"))

    sheet = load_workbook(io.BytesIO(export(seed_run, "xlsx", reviewer="alice")))["Labels"]

    assert sheet["J2"].value == HYPERLINK and sheet["J2"].data_type == "s"


def test_rows_of_another_reviewer_are_refused_never_reattributed(seed_run, alice):
    """The agreed table shows seed-reviewer's labels on the 5 cited claims: imported by alice,
    each of those rows is refused (an import never gives one reviewer's label to another) and
    nothing is written; the uncited claim's row names nobody."""
    edited = edit_file(export(seed_run, "xlsx"), "xlsx", {2: ("UNSUPPORTED", "P1 says twice, not doubling")})

    with pytest.raises(LabelImportError) as failure:
        label_table_import_apply(run=seed_run, reviewer=alice, table_file=read_label_table(edited, format="xlsx"))

    assert [(issue.field, issue.line) for issue in failure.value.issues] == [("reviewer", line) for line in
                                                                            range(2, 7)]
    assert failure.value.issues[0].reason.startswith(
        "the row is seed-reviewer's label, not alice's: an import never gives one reviewer's label to another.")
    assert Label.objects.filter(reviewer=alice).count() == 0


def test_apply_keeps_history_and_moves_the_current_label(seed_run, alice):
    claim = Claim.objects.get(answer__run=seed_run, index=1)
    old = Label.objects.create(claim=claim, reviewer=alice, value="SUPPORTED", justification="first look",
                               claim_revision=1)
    edited = edit_file(export(seed_run, "csv", reviewer="alice"), "csv", {1: ("UNSUPPORTED", "second look")})

    label_table_import_apply(run=seed_run, reviewer=alice, table_file=read_label_table(edited, format="csv"))

    labels = list(Label.objects.filter(claim=claim, reviewer=alice).order_by("id"))
    assert [(label.value, label.justification, label.is_current) for label in labels] == [
        ("SUPPORTED", "first look", False), ("UNSUPPORTED", "second look", True)]
    assert labels[0].pk == old.pk


def test_applying_changes_the_score(seed_run, alice):
    """seed-reviewer alone: support 3/5. Alice agrees on claims 1–5 but says
    claim 3 is SUPPORTED: claim 3 is then disputed (pending) → support 3/4."""
    rows = {i: ("SUPPORTED" if i in (1, 2, 3, 4) else "UNSUPPORTED", "checked") for i in range(1, 6)}
    edited = edit_file(export(seed_run, "jsonl", reviewer="alice"), "jsonl", rows)
    assert str(table_claim_metrics(label_table_frame(seed_run)).support) == "3/5 = 0.60"

    label_table_import_apply(run=seed_run, reviewer=alice, table_file=read_label_table(edited, format="jsonl"))

    metrics = table_claim_metrics(label_table_frame(seed_run))
    assert str(metrics.support) == "3/4 = 0.75" and metrics.pending == 1


# -------------------------------------------------------------- validation


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


def test_apply_is_all_or_nothing(seed_run, alice):
    edited = edit_file(export(seed_run, "csv", reviewer="alice"), "csv",
                       {1: ("UNSUPPORTED", "good row"), 2: ("UNSUPPORTED", "good row"), 4: ("UNCITED", "bad row")})
    before = Label.objects.count()

    with pytest.raises(LabelImportError) as failure:
        label_table_import_apply(run=seed_run, reviewer=alice, table_file=read_label_table(edited, format="csv"))

    assert [(i.line, i.field) for i in failure.value.issues] == [(5, "label")]
    assert Label.objects.count() == before
    assert not Label.objects.filter(reviewer=alice).exists()


def test_unreadable_files_are_reported_not_raised():
    assert [str(i) for i in read_label_table(b"not a zip", format="xlsx").issues] == [
        "line 1: (file): not an .xlsx workbook: the file is plain text (a CSV file? name it .csv)"]
    assert read_label_table(b"claim,text\n1,2\n", format="csv").issues[0].reason.startswith("no 'label' column")
    assert read_label_table(b"\xff\xfe", format="csv").issues[0].field == "(file)"


# ------------------------------------------------------------------- pages


def import_url(run: Run, name: str = "label_import") -> str:
    return reverse(name, kwargs={"project_slug": run.project.slug, "run_name": run.name})


def upload(data: bytes, name: str) -> io.BytesIO:
    handle = io.BytesIO(data)
    handle.name = name
    return handle


def test_upload_previews_then_apply_saves(client, seed_run, alice):
    client.force_login(alice)
    edited = edit_file(export(seed_run, "xlsx", reviewer="alice"), "xlsx", {3: ("SUPPORTED", "<script>x</script>")})

    page = client.post(import_url(seed_run), {"file": upload(edited, "mine.xlsx")}).content.decode()

    assert '<strong id="change-count">1</strong>' in page
    assert "&lt;script&gt;x&lt;/script&gt;" in page and "<script>x</script>" not in page
    assert not Label.objects.filter(reviewer=alice).exists()
    token = re.search(r'name="token" value="([^"]+)"', page).group(1)
    response = client.post(import_url(seed_run, "label_import_apply"), {"token": token})
    assert response.status_code == 302
    assert Label.objects.get(reviewer=alice).value == "SUPPORTED"
    after = client.get(response["Location"]).content.decode()
    assert "Imported 1 label as alice from mine.xlsx." in after
    # The token is single-use: its file is gone.
    assert client.post(import_url(seed_run, "label_import_apply"), {"token": token}).status_code == 302
    assert Label.objects.filter(reviewer=alice).count() == 1


def test_upload_with_bad_rows_shows_them_and_offers_no_apply(client, seed_run, alice):
    client.force_login(alice)
    edited = edit_file(export(seed_run, "csv", reviewer="alice"), "csv", {4: ("UNCITED", "")})

    response = client.post(import_url(seed_run), {"file": upload(edited, "mine.csv")},
                           headers={"HX-Request": "true"})

    body = response.content.decode()
    assert "<html" not in body and body.lstrip().startswith('<div id="import-preview"')
    assert ("<td class=\"num\" data-label=\"Row\">5</td><td data-label=\"Column\"><code>label</code></td>"
            "<td>UNCITED on a claim with 1 citation(s)") in body
    assert 'name="token"' not in body


def test_upload_size_limit_and_file_type(client, seed_run, alice, settings):
    client.force_login(alice)
    settings.CITELAB_MAX_UPLOAD_BYTES = 100

    too_big = client.post(import_url(seed_run), {"file": upload(b"x" * 101, "big.csv")}).content.decode()
    settings.CITELAB_MAX_UPLOAD_BYTES = 10_000
    wrong_type = client.post(import_url(seed_run), {"file": upload(b"x", "labels.pdf")}).content.decode()

    assert "big.csv is 101\xa0bytes; the limit is 100\xa0bytes (CITELAB_MAX_UPLOAD_MB)." in too_big
    assert "use a .xlsx, .csv or .jsonl file" in wrong_type


def test_apply_refuses_a_token_of_another_reviewer(client, seed_run, alice):
    client.force_login(alice)
    edited = edit_file(export(seed_run, "csv", reviewer="alice"), "csv", {1: ("UNSUPPORTED", "no")})
    page = client.post(import_url(seed_run), {"file": upload(edited, "mine.csv")}).content.decode()
    token = re.search(r'name="token" value="([^"]+)"', page).group(1)
    bob = ReviewerFactory(username="bob")
    seed_run.project.members.add(bob)
    client.force_login(bob)

    response = client.post(import_url(seed_run, "label_import_apply"), {"token": token}, follow=True)

    assert "That preview expired or is not yours" in response.content.decode()
    assert not Label.objects.filter(reviewer__in=[alice, bob]).exists()


# ----------------------------------------------------------------- command


def test_import_labels_command_previews_then_applies(seed_run, alice, tmp_path, capsys):
    path = tmp_path / "alice.xlsx"
    path.write_bytes(edit_file(export(seed_run, "xlsx", reviewer="alice"), "xlsx", {5: ("SUPPORTED", "fine")}))

    call_command("import_labels", str(path), run=seed_run.name, project="seed", reviewer="alice")
    preview_out = capsys.readouterr().out
    assert not Label.objects.filter(reviewer=alice).exists()
    call_command("import_labels", str(path), run=seed_run.name, project="seed", reviewer="alice", apply=True)

    assert "row 6: seed-support-1 claim 5: none → SUPPORTED (justification changed)" in preview_out
    assert "preview only: 1 label(s) would change" in preview_out
    assert Label.objects.get(reviewer=alice).value == "SUPPORTED"


def test_import_labels_command_fails_on_bad_rows(seed_run, alice, tmp_path, capsys):
    path = tmp_path / "alice.csv"
    path.write_bytes(edit_file(export(seed_run, "csv", reviewer="alice"), "csv", {6: ("SUPPORTED", "x")}))

    with pytest.raises(CommandError, match="1 bad row"):
        call_command("import_labels", str(path), run=seed_run.name, project="seed", reviewer="alice", apply=True)
    assert "row 7: label: SUPPORTED on a claim without citations" in capsys.readouterr().err
    with pytest.raises(CommandError, match="no reviewer 'zed'"):
        call_command("import_labels", str(path), run=seed_run.name, project="seed", reviewer="zed")


# ------------------------------------------------- answers files as tables


def seed_as_table_rows() -> list[list[object]]:
    """fixtures/seed_coverage_support.jsonl as an answers table, one row per claim."""
    data = json.loads(SEED.read_text().splitlines()[0])
    header = ["question_id", "question", "run", "answer", "answerable", "passages", "claim_index", "claim",
              "citations", "span", "label", "justification", "reviewer"]
    rows: list[list[object]] = [header]
    for i, claim in enumerate(data["claims"], start=1):
        first = i == 1
        rows.append([
            data["question_id"], data["question"] if first else "", data["run"], data["answer"] if first else "",
            "true" if first else "", json.dumps(data["passages"]) if first else "", i, claim["text"],
            ", ".join(c["passage_id"] for c in claim["citations"]), "", claim.get("label") or "",
            claim.get("justification") or "", claim.get("reviewer") or "",
        ])
    return rows


@pytest.mark.parametrize("fmt", ["csv", "xlsx"])
def test_answers_table_imports_like_the_jsonl_file(db, fmt):
    """The seed as a table gives the same run as the JSONL: 5 claims, all
    cited, 3 SUPPORTED → coverage 5/5, support 3/5."""
    from labeling.importers.load import project_for_import

    rows = seed_as_table_rows()
    if fmt == "csv":
        out = io.StringIO()
        csv.writer(out).writerows(rows)
        data = out.getvalue().encode()
    else:
        workbook = Workbook()
        for row in rows:
            workbook.active.append(row)
        buffer = io.BytesIO()
        workbook.save(buffer)
        data = buffer.getvalue()
    project = project_for_import(slug="tables")

    report = run_import(project=project, source=data, format=fmt)

    assert (report.answers_created, report.claims_created, report.citations_created, report.labels_created) == (
        1, 5, 5, 5)
    run = Run.objects.get(project=project, name="seed-coverage-support")
    metrics = table_claim_metrics(label_table_frame(run))
    assert (str(metrics.coverage), str(metrics.support)) == ("5/5 = 1.00", "3/5 = 0.60")
    assert Answer.objects.get(run=run).question.answerable is True


def test_answers_table_reports_bad_rows_by_spreadsheet_row(db, tmp_path):
    from labeling.importers.load import project_for_import

    rows = seed_as_table_rows()
    rows[3][10] = "GREAT"        # row 4: claim 3's label
    rows[2][2] = "other-run"     # row 3: claim 2 in another run → a second answer without question/answer
    out = io.StringIO()
    csv.writer(out).writerows(rows)
    path = tmp_path / "answers.csv"
    path.write_text(out.getvalue())
    project = project_for_import(slug="tables")

    with pytest.raises(ImportFailed) as failure:
        run_import(project=project, source=path)

    issues = [(i.line, i.field) for i in failure.value.issues]
    assert (4, "label") in issues
    assert (3, "question") in issues and (3, "answer") in issues
    assert not Run.objects.filter(project=project).exists()
    with pytest.raises(CommandError, match="problem"):
        call_command("import_answers", str(path), project="tables")


@pytest.mark.parametrize("claims", [5, 500])
def test_import_preview_page_query_budget(client, reviewer, django_assert_max_num_queries, claims):
    from tests.test_label_tables import bulk_run

    run = bulk_run(claims)
    run.project.members.add(reviewer)
    client.force_login(reviewer)
    # The reviewer's own table: rows naming another reviewer would be refused.
    edited = edit_file(export(run, "csv", reviewer=reviewer.username), "csv",
                       {i: ("UNSUPPORTED", "weaker") for i in range(1, claims + 1)})
    # session + user (2), run with project (1), membership (1), claims (1), claims citing only
    # fabricated ids (1), reviewer's labels (1), current label table for the labeled_at check (6) = 13,
    # whatever the rows.
    with django_assert_max_num_queries(13):
        page = client.post(import_url(run), {"file": upload(edited, "all.csv")}).content.decode()
    assert f'<strong id="change-count">{claims}</strong>' in page
    assert page.count('data-label="Your label"') == claims


# ------------------------------------------------ hostile and damaged files


def csv_bytes(rows: list[list[object]]) -> bytes:
    out = io.StringIO()
    csv.writer(out).writerows(rows)
    return out.getvalue().encode()


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


def damaged_xlsx(data: bytes) -> bytes:
    """``data`` (an .xlsx) with its first worksheet's XML cut in half."""
    source = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as target:
        for name in source.namelist():
            content = source.read(name)
            if name == "xl/worksheets/sheet1.xml":
                content = content[: len(content) // 2]
            target.writestr(name, content)
    return out.getvalue()


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


def header_only_xlsx() -> bytes:
    workbook = Workbook()
    workbook.active.title = "Labels"
    workbook.active.append(["claim_id", "label", "justification"])
    out = io.BytesIO()
    workbook.save(out)
    return out.getvalue()


def empty_xlsx() -> bytes:
    out = io.BytesIO()
    Workbook().save(out)
    return out.getvalue()


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


def test_upload_of_a_header_only_file_shows_that_it_has_no_rows(client, seed_run, alice):
    client.force_login(alice)

    page = client.post(import_url(seed_run), {"file": upload(b"claim_id,label\r\n", "mine.csv")}).content.decode()
    empty = client.post(import_url(seed_run), {"file": upload(b"", "mine.csv")}).content.decode()

    assert '<p class="message error" role="alert">the file has no rows below the header</p>' in page
    assert "Nothing to import" not in page and 'name="token"' not in page
    assert '<p class="message error" role="alert">the file has no rows: it is empty</p>' in empty


def test_import_labels_command_says_the_file_has_no_rows(seed_run, alice, tmp_path):
    path = tmp_path / "empty.csv"
    path.write_bytes(b"claim_id,label,justification\n")

    with pytest.raises(CommandError, match=r"empty\.csv: the file has no rows below the header"):
        call_command("import_labels", str(path), run=seed_run.name, project="seed", reviewer="alice")
    assert not Label.objects.filter(reviewer=alice).exists()


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


def stored_uploads() -> list[str]:
    try:
        return sorted(default_storage.listdir("label_imports")[1])
    except FileNotFoundError:
        return []


def test_applied_upload_is_deleted_from_storage(client, seed_run, alice):
    client.force_login(alice)
    edited = edit_file(export(seed_run, "csv", reviewer="alice"), "csv", {1: ("UNSUPPORTED", "no")})
    assert stored_uploads() == []

    page = client.post(import_url(seed_run), {"file": upload(edited, "mine.csv")}).content.decode()
    # The file and what its preview checked (row → claim, revision).
    assert [name.split(".", 1)[1] for name in stored_uploads()] == ["checked.json", "csv"]
    token = re.search(r'name="token" value="([^"]+)"', page).group(1)
    client.post(import_url(seed_run, "label_import_apply"), {"token": token})

    assert Label.objects.get(reviewer=alice).value == "UNSUPPORTED"
    assert stored_uploads() == []


def test_refused_apply_deletes_the_upload_too(client, seed_run, alice):
    """The database moves between preview and apply (claim 1 is edited), so
    the apply is refused and shows the rows; its stored file has no further use."""
    client.force_login(alice)
    edited = edit_file(export(seed_run, "csv", reviewer="alice"), "csv", {1: ("UNSUPPORTED", "no")})
    page = client.post(import_url(seed_run), {"file": upload(edited, "mine.csv")}).content.decode()
    token = re.search(r'name="token" value="([^"]+)"', page).group(1)
    claim_edit(claim=Claim.objects.get(answer__run=seed_run, index=1), text="Retries back off, slowly.")

    response = client.post(import_url(seed_run, "label_import_apply"), {"token": token})

    assert "the labels or claims changed since the preview" in response.content.decode()
    assert stored_uploads() == []


def test_new_preview_deletes_previews_older_than_a_day(client, seed_run, alice):
    """A 25-hour-old and a 1-hour-old stored preview: uploading a new file
    removes the first only (its token has expired) and stores the new one."""
    old = default_storage.save("label_imports/old.csv", ContentFile(b"x"))
    recent = default_storage.save("label_imports/recent.csv", ContentFile(b"x"))
    now = time.time()
    os.utime(default_storage.path(old), (now - 25 * 3600, now - 25 * 3600))
    os.utime(default_storage.path(recent), (now - 3600, now - 3600))
    client.force_login(alice)
    edited = edit_file(export(seed_run, "csv", reviewer="alice"), "csv", {1: ("UNSUPPORTED", "no")})
    assert stored_uploads() == ["old.csv", "recent.csv"]

    client.post(import_url(seed_run), {"file": upload(edited, "mine.csv")})

    left = stored_uploads()
    assert "old.csv" not in left and "recent.csv" in left and len(left) == 3  # + the new file and its checks


# ------------------------------------------- newer labels and moved claims

EXPORTED_AT = datetime(2025, 1, 31, 9, 15, tzinfo=UTC)


def export_then_relabel_claim_2(run: Run) -> bytes:
    """The agreed table exported while seed-reviewer's labels date from
    2025-01-31 09:15 UTC (every row's labeled_at); then seed-reviewer turns
    claim 2 from SUPPORTED to UNSUPPORTED in the app (now, so newer)."""
    Label.objects.filter(claim__answer__run=run).update(created_at=EXPORTED_AT)
    exported = export(run, "csv")
    claim = Claim.objects.get(answer__run=run, index=2)
    old = Label.objects.get(claim=claim, is_current=True)
    Label.objects.filter(pk=old.pk).update(is_current=False)
    Label.objects.create(claim=claim, reviewer=old.reviewer, value=LabelValue.UNSUPPORTED,
                         justification="P1 says twice as long.", claim_revision=claim.revision)
    return exported


def seed_reviewer():
    """The reviewer whose labels the seed run's table shows: the one who may re-upload its rows
    (a row naming another reviewer is refused)."""
    return Reviewer.objects.get(username="seed-reviewer")


def test_reupload_of_an_older_export_marks_each_row_that_would_turn_back_a_newer_label(seed_run):
    """Row 3 (claim 2) still reads SUPPORTED by seed-reviewer at 09:15; the app
    now has seed-reviewer's UNSUPPORTED, made later: a change, and newer.
    Row 5 (claim 4) was edited offline: a change, not newer."""
    exported = export_then_relabel_claim_2(seed_run)
    edited = edit_file(exported, "csv", {4: ("UNSUPPORTED", "only a weaker claim")})

    preview = preview_of(seed_run, seed_reviewer(), edited, "csv")

    assert [(change.line, change.new_label) for change in preview.changes] == [(3, "SUPPORTED"), (5, "UNSUPPORTED")]
    assert [change.line for change in preview.newer] == [3]
    name, value, when = preview.changes[0].newer
    assert (name, value) == ("seed-reviewer", "UNSUPPORTED") and when > EXPORTED_AT
    assert preview.changes[1].newer is None


def test_apply_needs_a_choice_about_newer_labels_then_skips_or_overwrites_them(seed_run):
    seed = seed_reviewer()
    exported = export_then_relabel_claim_2(seed_run)
    table_file = read_label_table(edit_file(exported, "csv", {4: ("UNSUPPORTED", "only a weaker claim")}),
                                  format="csv")

    def current():
        return sorted(Label.objects.filter(reviewer=seed, is_current=True).values_list("claim__index", "value"))

    before = current()
    assert before == [(1, "SUPPORTED"), (2, "UNSUPPORTED"), (3, "UNSUPPORTED"), (4, "SUPPORTED"),
                      (5, "UNSUPPORTED")]
    with pytest.raises(ValidationError) as refused:
        label_table_import_apply(run=seed_run, reviewer=seed, table_file=table_file)
    assert refused.value.code == NEWER_LABELS
    assert refused.value.messages == ["1 row(s) would turn back a label made after this file was exported (rows 3): "
                                      "choose to overwrite those labels or to skip those rows."]
    assert current() == before

    skipped = label_table_import_apply(run=seed_run, reviewer=seed, table_file=table_file, overwrite_newer=False)
    assert [change.line for change in skipped.skipped_newer] == [3]
    assert current() == [(1, "SUPPORTED"), (2, "UNSUPPORTED"), (3, "UNSUPPORTED"), (4, "UNSUPPORTED"),
                         (5, "UNSUPPORTED")]

    label_table_import_apply(run=seed_run, reviewer=seed, table_file=table_file, overwrite_newer=True)
    assert current() == [(1, "SUPPORTED"), (2, "SUPPORTED"), (3, "UNSUPPORTED"), (4, "UNSUPPORTED"),
                         (5, "UNSUPPORTED")]


def test_reviewers_own_label_changed_in_the_app_after_their_import_is_newer(seed_run, alice):
    """alice labels claim 5 offline and imports it; later she relabels it in
    the app. Her old file, uploaded again, would turn that back: line 5 is
    marked newer (her own label, made after the row's blank labeled_at)."""
    mine = edit_file(export(seed_run, "jsonl", reviewer="alice"), "jsonl", {5: ("SUPPORTED", "fine")})
    label_table_import_apply(run=seed_run, reviewer=alice, table_file=read_label_table(mine, format="jsonl"))
    claim = Claim.objects.get(answer__run=seed_run, index=5)
    Label.objects.filter(reviewer=alice).update(is_current=False)
    Label.objects.create(claim=claim, reviewer=alice, value=LabelValue.UNSUPPORTED, justification="no",
                         claim_revision=claim.revision)

    preview = preview_of(seed_run, alice, mine, "jsonl")

    assert [(change.line, change.old_label, change.new_label, change.newer[:2]) for change in preview.changes] == [
        (5, "UNSUPPORTED", "SUPPORTED", ("alice", "UNSUPPORTED"))]


def test_import_page_shows_newer_rows_and_asks_which_way(client, seed_run):
    seed = seed_reviewer()
    seed_run.project.members.add(seed)
    exported = export_then_relabel_claim_2(seed_run)
    edited = edit_file(exported, "csv", {4: ("UNSUPPORTED", "only a weaker claim")})
    client.force_login(seed)

    page = client.post(import_url(seed_run), {"file": upload(edited, "old.csv")}).content.decode()

    assert '<strong id="newer-count">1</strong> newer in the app' in page
    assert "newer in the app: seed-reviewer's UNSUPPORTED of" in page
    assert page.count('type="radio" name="newer"') == 2
    token = re.search(r'name="token" value="([^"]+)"', page).group(1)
    again = client.post(import_url(seed_run, "label_import_apply"), {"token": token}).content.decode()
    assert "1 row(s) would turn back a label made after this file was exported (rows 3)" in again
    assert Label.objects.get(reviewer=seed, is_current=True, claim__index=4).value == "SUPPORTED"
    token = re.search(r'name="token" value="([^"]+)"', again).group(1)
    done = client.post(import_url(seed_run, "label_import_apply"), {"token": token, "newer": "skip"}, follow=True)
    assert ("Imported 1 label as seed-reviewer from old.csv; skipped 1 row with a newer label in the app."
            in done.content.decode())
    assert Label.objects.get(reviewer=seed, is_current=True, claim__index=4).value == "UNSUPPORTED"
    assert Label.objects.get(reviewer=seed, is_current=True, claim__index=2).value == "UNSUPPORTED"


def test_import_labels_command_needs_overwrite_or_skip_for_newer_labels(seed_run, tmp_path, capsys):
    path = tmp_path / "old.csv"
    path.write_bytes(export_then_relabel_claim_2(seed_run))
    seed = seed_reviewer()
    labels = Label.objects.filter(reviewer=seed).count()

    call_command("import_labels", str(path), run=seed_run.name, project="seed", reviewer="seed-reviewer")
    assert ("row 3: seed-support-1 claim 2: UNSUPPORTED → SUPPORTED (justification changed) [newer in the app: "
            "seed-reviewer's UNSUPPORTED of ") in capsys.readouterr().out
    with pytest.raises(CommandError, match="Run again with --overwrite-newer or --skip-newer"):
        call_command("import_labels", str(path), run=seed_run.name, project="seed", reviewer="seed-reviewer",
                     apply=True)
    call_command("import_labels", str(path), run=seed_run.name, project="seed", reviewer="seed-reviewer",
                 apply=True, skip_newer=True)
    assert "0 label(s) of seed-reviewer saved, 1 row(s) with a newer label skipped" in capsys.readouterr().out
    assert Label.objects.filter(reviewer=seed).count() == labels


def test_apply_refuses_a_row_whose_claim_was_reworded_after_the_preview_without_a_revision_column(seed_run, alice):
    """A file made by another tool: claim_id, label, justification, no
    claim_revision or claim text to catch a rewording. The preview checked
    claim 3 at revision 1; it is reworded before apply: row 2 is refused."""
    ids = claim_ids(seed_run)
    data = csv_bytes([["claim_id", "label", "justification"], [ids[3], "SUPPORTED", "P2 says so"]])
    preview = preview_of(seed_run, alice, data, "csv")
    assert preview.checked == {2: (ids[3], 1)} and len(preview.changes) == 1
    claim_edit(claim=Claim.objects.get(pk=ids[3]), text="Tokens never expire.")

    with pytest.raises(LabelImportError) as refused:
        label_table_import_apply(run=seed_run, reviewer=alice, table_file=read_label_table(data, format="csv"),
                                 checked=preview.checked)

    assert [str(issue) for issue in refused.value.issues] == [
        "line 2: claim: the claim changed since the preview (revision 1 → 2: its text or citations were edited); "
        "nothing was imported: upload the file again to see it as it is now"]
    assert not Label.objects.filter(reviewer=alice).exists()


def test_upload_then_reword_then_apply_is_refused_naming_the_row(client, seed_run, alice):
    ids = claim_ids(seed_run)
    data = csv_bytes([["claim_id", "label", "justification"], [ids[3], "SUPPORTED", "P2 says so"]])
    client.force_login(alice)
    page = client.post(import_url(seed_run), {"file": upload(data, "tool.csv")}).content.decode()
    token = re.search(r'name="token" value="([^"]+)"', page).group(1)
    claim_edit(claim=Claim.objects.get(pk=ids[3]), text="Tokens never expire.")

    refused = client.post(import_url(seed_run, "label_import_apply"), {"token": token}).content.decode()

    assert "Nothing was imported" in refused
    assert "the claim changed since the preview (revision 1 → 2" in refused
    assert not Label.objects.filter(reviewer=alice).exists()


def test_a_token_without_the_previews_checks_is_refused_not_applied(client, seed_run, alice):
    """A token signed before previews recorded their checks names only the
    file: apply refuses it (upload again) instead of applying unchecked rows."""
    from django.core import signing

    name = default_storage.save("label_imports/old.csv", ContentFile(edit_file(
        export(seed_run, "csv", reviewer="alice"), "csv", {1: ("UNSUPPORTED", "no")})))
    token = signing.dumps({"name": name, "run": seed_run.pk, "user": alice.pk, "format": "csv",
                           "filename": "old.csv"}, salt="citelab.label-import")
    client.force_login(alice)

    response = client.post(import_url(seed_run, "label_import_apply"), {"token": token}, follow=True)

    assert "That preview expired or is not yours: upload the file again." in response.content.decode()
    assert not Label.objects.filter(reviewer=alice).exists()
