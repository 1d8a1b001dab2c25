"""Label table exports: the XLSX workbook, CSV and JSONL files, the download
view and the export_labels command."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse
from openpyxl import load_workbook

from labeling.exports.cells import EXCEL_MAX_CELL_CHARS, spreadsheet_text, spreadsheet_texts
from labeling.exports.csv_jsonl import csv_cell
from labeling.exports.label_table import (
    LABEL_TABLE_COLUMNS,
    _judgment_cells,
    label_table_frame,
    passage_texts,
    passages_frame,
)
from labeling.models import Claim, Label, Passage, Run
from labeling.tables.export import _reviewer_of, label_table_export
from labeling.tables.versions import label_table_snapshot
from tests.conftest import FIXTURES_DIR
from tests.counted_run import counted_run
from tests.factories import ReviewerFactory

SEED = FIXTURES_DIR / "seed_coverage_support.jsonl"
HYPERLINK = '=HYPERLINK("http://x","y")'


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"


@pytest.fixture
def seed_run(db):
    """The seed's worked example: 5 cited claims, 3 SUPPORTED, 2 UNSUPPORTED."""
    from labeling.importers.load import project_for_import, run_import

    project = project_for_import(slug="seed")
    run_import(project=project, source=SEED)
    return Run.objects.select_related("project").get(project=project, name="seed-coverage-support")


def export(run: Run, fmt: str, **kwargs) -> bytes:
    out = io.BytesIO()
    label_table_export(run=run, fmt=fmt, out=out, **kwargs)
    return out.getvalue()


def set_justification(run: Run, index: int, text: str) -> None:
    Label.objects.filter(claim__answer__run=run, claim__index=index, is_current=True).update(justification=text)


def test_workbook_has_the_four_sheets_with_styled_frozen_filtered_headers(seed_run):
    workbook = load_workbook(io.BytesIO(export(seed_run, "xlsx")))

    assert workbook.sheetnames == ["Labels", "Answers", "Summary", "Passages"]
    labels = workbook["Labels"]
    assert [cell.value for cell in labels[1]] == list(LABEL_TABLE_COLUMNS)
    assert labels["A1"].font.b is True
    assert labels.freeze_panes == "A2"
    assert labels.auto_filter.ref == "A1:W6"  # 23 columns, header + 5 claims
    assert labels.column_dimensions["E"].width == 60  # claim
    assert labels["E2"].alignment.wrap_text is True
    assert labels.max_row == 6
    assert workbook["Passages"].max_row == 4  # header + P1, P2, P3
    assert workbook["Answers"].max_row == 2


def test_label_column_has_a_drop_down_and_colours_per_value(seed_run):
    labels = load_workbook(io.BytesIO(export(seed_run, "xlsx")))["Labels"]

    validations = labels.data_validations.dataValidation
    assert len(validations) == 1
    assert validations[0].type == "list"
    assert validations[0].formula1 == '"SUPPORTED,UNSUPPORTED,UNCITED"'
    assert str(validations[0].sqref) == "I2:I6"  # label is column I
    rules = [rule for formatting in labels.conditional_formatting for rule in formatting.rules]
    assert sorted(rule.formula[0] for rule in rules) == ['"SUPPORTED"', '"UNCITED"', '"UNSUPPORTED"']


def test_labels_sheet_values_and_types(seed_run):
    labels = load_workbook(io.BytesIO(export(seed_run, "xlsx")))["Labels"]
    header = [cell.value for cell in labels[1]]
    first = dict(zip(header, [cell.value for cell in labels[2]], strict=True))
    claim = Claim.objects.get(answer__run=seed_run, index=1)

    assert first["run"] == "seed-coverage-support"
    assert first["question_id"] == "seed-support-1"
    assert first["claim_index"] == 1 and isinstance(first["claim_index"], int)
    assert first["claim_id"] == claim.pk and first["claim_revision"] == 1
    assert first["claim"] == claim.text
    assert first["citations"] == "P1"
    assert first["passage"].startswith("[P1] The backup agent repeats a failed upload")
    assert first["label"] == "SUPPORTED"
    assert first["reviewer"] == "seed-reviewer"
    assert first["status"] == "labeled"
    assert [labels.cell(row=r, column=9).value for r in range(2, 7)] == [
        "SUPPORTED", "SUPPORTED", "UNSUPPORTED", "SUPPORTED", "UNSUPPORTED"]


def test_formula_like_justifications_come_back_as_text_in_xlsx(seed_run):
    set_justification(seed_run, 1, HYPERLINK)
    set_justification(seed_run, 2, "+1 more source")
    set_justification(seed_run, 3, "-partly")
    set_justification(seed_run, 4, "@mention")

    labels = load_workbook(io.BytesIO(export(seed_run, "xlsx")))["Labels"]
    cells = [labels.cell(row=r, column=10) for r in range(2, 6)]  # justification is column J

    assert [cell.value for cell in cells] == [HYPERLINK, "+1 more source", "-partly", "@mention"]
    assert [cell.data_type for cell in cells] == ["s", "s", "s", "s"]
    assert all(cell.quotePrefix for cell in cells)
    assert labels.cell(row=6, column=10).quotePrefix is False  # ordinary text is left alone


def test_formula_like_justification_is_apostrophe_guarded_in_csv(seed_run):
    set_justification(seed_run, 1, HYPERLINK)
    set_justification(seed_run, 2, "'quoted")

    text = export(seed_run, "csv").decode("utf-8-sig")
    rows = list(csv.DictReader(io.StringIO(text, newline="")))

    assert rows[0]["justification"] == "'" + HYPERLINK
    assert rows[1]["justification"] == "''quoted"  # so removing one apostrophe is lossless
    assert [row["claim_index"] for row in rows] == ["1", "2", "3", "4", "5"]
    assert text.splitlines()[0] == ",".join(LABEL_TABLE_COLUMNS)
    assert csv_cell(None) == "" and csv_cell("plain") == "plain" and csv_cell("\tx") == "'\tx"


def test_jsonl_rows_carry_every_column_with_nulls(seed_run):
    Label.objects.filter(claim__answer__run=seed_run, claim__index=5).delete()
    set_justification(seed_run, 1, HYPERLINK)

    rows = [json.loads(line) for line in export(seed_run, "jsonl").decode("utf-8").splitlines()]

    assert len(rows) == 5 and list(rows[0]) == list(LABEL_TABLE_COLUMNS)
    assert rows[0]["justification"] == HYPERLINK
    assert rows[4]["label"] is None and rows[4]["labeled_at"] is None and rows[4]["status"] == "pending"


def test_summary_and_answers_sheets_give_fractions_and_ratios(seed_run):
    """Seed: coverage 5/5 = 1.0 exactly, support 3/5 = 0.6, gap 0.4."""
    workbook = load_workbook(io.BytesIO(export(seed_run, "xlsx")))
    summary = {row[0]: row[1:] for row in workbook["Summary"].iter_rows(min_row=2, values_only=True)}
    answers = workbook["Answers"]
    header = [cell.value for cell in answers[1]]
    answer = dict(zip(header, [cell.value for cell in answers[2]], strict=True))

    assert summary["coverage (pooled)"][:2] == (1, "5/5 = 1.00")
    assert summary["support (pooled)"][:2] == (0.6, "3/5 = 0.60")
    assert summary["gap (pooled)"][0] == pytest.approx(0.4)
    assert summary["coverage (per-answer mean)"][:2] == (1, "1.00")
    assert summary["table"][0] == "current label table (not a version)"
    assert summary["sha256"][0] == "—"
    assert summary["pending (cited, no agreed label)"][0] == 0
    assert (answer["claims"], answer["cited"], answer["supported"], answer["unsupported"]) == (5, 5, 3, 2)
    assert answer["coverage"] == 1 and answer["coverage_ratio"] == "5/5 = 1.00"
    assert answer["support"] == 0.6 and answer["support_ratio"] == "3/5 = 0.60"


def test_version_export_shows_the_frozen_labels_hash_and_passages(seed_run):
    version = label_table_snapshot(run=seed_run, note="v1 note")
    Label.objects.filter(claim__answer__run=seed_run).update(value="SUPPORTED")

    workbook = load_workbook(io.BytesIO(export(seed_run, "xlsx", version=version)))
    summary = {row[0]: row[1] for row in workbook["Summary"].iter_rows(min_row=2, values_only=True)}
    labels = workbook["Labels"]

    assert summary["version"] == 1 and summary["sha256"] == version.sha256
    assert summary["version note"] == "v1 note"
    assert summary["support (pooled)"] == 0.6
    assert [labels.cell(row=r, column=9).value for r in range(2, 7)] == [
        "SUPPORTED", "SUPPORTED", "UNSUPPORTED", "SUPPORTED", "UNSUPPORTED"]
    assert labels["H2"].value.startswith("[P1] The backup agent repeats")


def test_spreadsheet_text_keeps_what_a_cell_can_hold():
    assert spreadsheet_text("a\r\nb\rc") == "a\nb\nc"
    assert spreadsheet_text("bell\x07 tab\t") == "bell tab\t"
    long = spreadsheet_text("x" * 40_000)
    assert len(long) == EXCEL_MAX_CELL_CHARS and long.endswith("…")


def test_spreadsheet_texts_is_spreadsheet_text_of_each_value():
    clean = ["plain", "=SUM(A1)", "line\nbreak\ttab", "x" * EXCEL_MAX_CELL_CHARS]
    assert spreadsheet_texts(clean) is clean  # nothing to rewrite: the column itself, scanned once
    for dirty in (["ok", "a\r\nb"], ["bell\x07", "ok"], ["ok", "x" * (EXCEL_MAX_CELL_CHARS + 1)], ["\x1f"]):
        assert spreadsheet_texts(dirty) == [spreadsheet_text(value) for value in dirty]
    assert spreadsheet_texts(["a\r\nb", "bell\x07 tab\t"]) == ["a\nb", "bell tab\t"]
    assert spreadsheet_texts([]) == []


def test_control_characters_and_long_passages_do_not_break_the_workbook(seed_run):
    Passage.objects.filter(answer__run=seed_run, passage_id="P1").update(text="p" * 40_000)
    set_justification(seed_run, 2, "line one\r\nline two\x0b")

    labels = load_workbook(io.BytesIO(export(seed_run, "xlsx")))["Labels"]

    assert labels["J3"].value == "line one\nline two"
    assert len(labels["H2"].value) == EXCEL_MAX_CELL_CHARS


def test_reviewer_export_shows_that_reviewers_labels(seed_run):
    alice = ReviewerFactory(username="alice")
    claim = Claim.objects.get(answer__run=seed_run, index=3)
    Label.objects.create(claim=claim, reviewer=alice, value="SUPPORTED", justification="mine", claim_revision=1)

    table = label_table_frame(seed_run, reviewer="alice")
    rows = [json.loads(line) for line in export(seed_run, "jsonl", reviewer="alice").decode().splitlines()]

    assert table["label"].tolist() == [None, None, "SUPPORTED", None, None]
    assert [row["reviewer"] for row in rows] == ["", "", "alice", "", ""]
    assert rows[2]["justification"] == "mine"


def test_reviewer_and_version_together_are_refused(seed_run):
    version = label_table_snapshot(run=seed_run, note="")
    with pytest.raises(ValueError, match="a version stores the agreed labels"):
        export(seed_run, "csv", version=version, reviewer="alice")


def test_export_labels_command_writes_each_format(seed_run, tmp_path, capsys):
    label_table_snapshot(run=seed_run, note="")
    for fmt in ("xlsx", "csv", "jsonl"):
        path = tmp_path / f"labels.{fmt}"
        call_command("export_labels", run=seed_run.name, project="seed", format=fmt, output=path, version=1)
        assert path.stat().st_size > 0
    assert "seed/seed-coverage-support version 1 →" in capsys.readouterr().out
    assert load_workbook(tmp_path / "labels.xlsx").sheetnames[0] == "Labels"
    assert len((tmp_path / "labels.jsonl").read_text().splitlines()) == 5


def test_export_labels_command_rejects_unknown_version(seed_run, tmp_path):
    with pytest.raises(CommandError, match="has no version 3"):
        call_command("export_labels", run=seed_run.name, project="seed", format="csv", output=tmp_path / "x.csv",
                     version=3)
    assert not (tmp_path / "x.csv").exists()


def test_export_labels_command_refuses_a_missing_folder(seed_run, tmp_path):
    output = tmp_path / "no-such-folder" / "labels.csv"
    with pytest.raises(CommandError, match=r"the folder '.*no-such-folder' does not exist; create it first"):
        call_command("export_labels", run=seed_run.name, project="seed", output=output)
    assert not (tmp_path / "no-such-folder").exists()


def test_export_labels_command_refuses_a_format_the_file_name_contradicts(seed_run, tmp_path):
    with pytest.raises(CommandError, match=r"--format csv but -o .*x\.xlsx ends in \.xlsx"):
        call_command("export_labels", run=seed_run.name, project="seed", format="csv", output=tmp_path / "x.xlsx")
    assert list(tmp_path.iterdir()) == []


def test_export_labels_command_takes_the_format_from_the_suffix(seed_run, tmp_path):
    call_command("export_labels", "--run", seed_run.name, "--project", "seed", "-o", str(tmp_path / "labels.xlsx"),
                 stdout=io.StringIO())
    call_command("export_labels", "--run", seed_run.name, "--project", "seed", "-o", str(tmp_path / "labels.csv"),
                 stdout=io.StringIO())
    assert load_workbook(tmp_path / "labels.xlsx").sheetnames == ["Labels", "Answers", "Summary", "Passages"]
    assert (tmp_path / "labels.csv").read_bytes().startswith(b"\xef\xbb\xbfrun,question_id,")
    with pytest.raises(CommandError, match="cannot tell the format from the suffix"):
        call_command("export_labels", run=seed_run.name, project="seed", output=tmp_path / "labels.txt")


def test_download_view_sends_the_file_with_a_name(client, seed_run, reviewer):
    seed_run.project.members.add(reviewer)
    client.force_login(reviewer)
    url = reverse("label_export", kwargs={"project_slug": "seed", "run_name": seed_run.name})

    response = client.get(url + "?format=xlsx")
    csv_response = client.get(url + "?format=csv&reviewer=me")

    assert response.status_code == 200
    assert response["Content-Type"] == "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
    assert 'filename="seed_seed-coverage-support_labels.xlsx"' in response["Content-Disposition"]
    assert load_workbook(io.BytesIO(b"".join(response.streaming_content))).sheetnames[0] == "Labels"
    assert 'filename="seed_seed-coverage-support_labels_alice.csv"' in csv_response["Content-Disposition"]
    assert client.get(url + "?format=pdf").status_code == 404


# Query counts the docstrings state, on tests/counted_run.py's run (nine claims, six cited,
# rev1's FULL judgment on q01's claim 1); they do not grow with the run.


def test_label_table_frame_query_count(db, django_assert_num_queries):
    world = counted_run()
    # The labels (read once, with their times), resolved_claims_frame's six (claims version, claims,
    # their texts and factual marks, answers, questions with gold, adjudications), claim revisions,
    # citations, judgments, sampled answers, passages.
    with django_assert_num_queries(12):
        table = label_table_frame(world.run)
    assert table["status"].tolist() == ["labeled", "labeled", "uncited", "adjudicated", "disagreement", "uncited",
                                        "labeled", "labeled", "uncited"]
    # The claims and answers now cached (labeling.exports.structure; in a test's transaction: outside
    # one, as a server reads the table, the structure is read afresh, labeling.db.consistent_read).
    # One reviewer's table leaves the adjudications out; a snapshot, the sample and passages.
    with django_assert_num_queries(9):
        label_table_frame(world.run, reviewer="rev1")
    with django_assert_num_queries(8):
        label_table_frame(world.run, with_passages=False)
    with django_assert_num_queries(7):
        label_table_frame(world.run, reviewer="rev1", with_passages=False)


def test_label_table_parts_query_counts(db, django_assert_num_queries):
    world = counted_run()
    with django_assert_num_queries(1):
        assert _judgment_cells(world.run, reviewer=None) == {world.claims["q01"][0].pk: ("[P1] FULL", "")}
    table = label_table_frame(world.run, with_passages=False)
    # The passages' texts, then the citations.
    with django_assert_num_queries(2):
        filled = passage_texts(world.run, table)
    assert filled["passage"].tolist()[:3] == ["[P1] One and two.", "[P1] One and two.", ""]
    with django_assert_num_queries(1):
        assert passages_frame(world.run)["question_id"].tolist() == ["q01", "q02", "q03"]
    # A member: the membership answers; a judge (no member): its labels on the run too.
    with django_assert_num_queries(1):
        assert _reviewer_of(world.run, "rev1")
    with django_assert_num_queries(2):
        assert _reviewer_of(world.run, "judge")
