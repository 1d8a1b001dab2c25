"""A lead's adjudication in the label tables, versions and files (SPEC §7, item 5):
the agreed table shows the adjudicated label with ``adjudicated_by``,
``adjudicated_at`` and ``adjudication_reason``, never the agreeing reviewer's
name, time and justification as if the label were theirs; the columns come
back through the label table importer."""

from __future__ import annotations

import csv
import io
import json
from io import StringIO

import pytest
from django.core.management import call_command
from openpyxl import load_workbook

from labeling.exports.label_table import LABEL_TABLE_COLUMNS, format_labeled_at, label_table_frame
from labeling.importers.label_table import read_label_table
from labeling.models import Adjudication, Claim, Reviewer
from labeling.tables.import_preview import label_table_import_preview
from labeling.tables.label_import import LabelImportError, label_table_import_apply
from labeling.tables.versions import label_table_snapshot, version_table
from labeling.team.adjudication import adjudication_save
from tests.test_adjudication import lead_site  # noqa: F401 (the fixture)

pytestmark = pytest.mark.django_db

REASON = "the passage names the alpha beta pair word for word"


def _adjudicate(run, lea) -> tuple[Claim, Adjudication]:
    """Claim 1 of q0000 (ann SUPPORTED "ann-why-1", bob UNSUPPORTED): lea says SUPPORTED, as ann did."""
    claim = Claim.objects.get(answer__run=run, answer__question_key="q0000", index=1)
    return claim, adjudication_save(claim=claim, lead=lea, value="SUPPORTED", reason=REASON)


def _row(rows: list[dict], claim: Claim) -> dict:
    (row,) = [row for row in rows if int(row["claim_id"]) == claim.pk]
    return row


def test_agreed_table_shows_the_adjudication_not_the_agreeing_reviewer(lead_site):  # noqa: F811
    """Before: claim 1 of q0000 is a disagreement (label None). After lea adjudicates
    SUPPORTED: label SUPPORTED, status adjudicated, adjudicated_by lea, its time and
    reason; reviewer, labeled_at and justification empty (ann agreed, but did not decide).
    The agreed claim 2 still shows ann and bob as before. Both labels stay in reviewer_labels."""
    run, lea = lead_site
    claim = Claim.objects.get(answer__run=run, answer__question_key="q0000", index=1)
    before = _row(label_table_frame(run).to_dict("records"), claim)
    assert (before["label"], before["status"], before["adjudicated_by"]) == (None, "disagreement", "")
    claim, adjudication = _adjudicate(run, lea)
    rows = label_table_frame(run).to_dict("records")
    row = _row(rows, claim)
    assert {key: row[key] for key in ("label", "status", "reviewer", "labeled_at", "justification",
                                      "adjudicated_by", "adjudicated_at", "adjudication_reason")} == {
        "label": "SUPPORTED", "status": "adjudicated", "reviewer": "", "labeled_at": None, "justification": "",
        "adjudicated_by": "lea", "adjudicated_at": format_labeled_at(adjudication.created_at),
        "adjudication_reason": REASON}
    assert [(item["reviewer"], item["label"]) for item in row["reviewer_labels"]] == [
        ("ann", "SUPPORTED"), ("bob", "UNSUPPORTED")]
    agreed = [r for r in rows if r["question_id"] == "q0000" and r["claim_index"] == 2][0]
    assert (agreed["status"], agreed["reviewer"], agreed["adjudicated_by"], agreed["adjudicated_at"]) == (
        "labeled", "ann, bob", "", None)
    # One reviewer's table leaves adjudications out: ann's own label, with her justification.
    mine = _row(label_table_frame(run, reviewer="ann").to_dict("records"), claim)
    assert (mine["label"], mine["reviewer"], mine["justification"], mine["adjudicated_by"]) == (
        "SUPPORTED", "ann", "ann-why-1", "")


def test_exported_files_and_versions_carry_the_adjudication(lead_site, tmp_path):  # noqa: F811
    """export_labels as CSV, JSONL and XLSX, and version 1 saved after the adjudication,
    exported again: each has the three columns, filled on the adjudicated row only."""
    run, lea = lead_site
    claim, adjudication = _adjudicate(run, lea)
    at = format_labeled_at(adjudication.created_at)
    expected = {"label": "SUPPORTED", "status": "adjudicated", "reviewer": "", "justification": "",
                "adjudicated_by": "lea", "adjudicated_at": at, "adjudication_reason": REASON}
    version = label_table_snapshot(run=run, author=lea, note="after adjudication")
    assert {key: _row(version_table(version).to_dict("records"), claim)[key] for key in expected} == expected
    for args, name in (([], "labels.csv"), ([], "labels.jsonl"), ([], "labels.xlsx"),
                       (["--version", "1"], "v1.csv")):
        path = tmp_path / name
        call_command("export_labels", "--run", "r", "--project", "team", *args, "-o", str(path), stdout=StringIO())
        if name.endswith(".csv"):
            rows = list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8-sig"))))
            header = list(rows[0])
        elif name.endswith(".jsonl"):
            rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
            header = list(rows[0])
        else:
            sheet = load_workbook(path, read_only=True)["Labels"]
            values = list(sheet.iter_rows(values_only=True))
            header = list(values[0])
            rows = [dict(zip(header, [("" if v is None else v) for v in row], strict=True)) for row in values[1:]]
        assert header == list(LABEL_TABLE_COLUMNS), name
        assert header[-5:] == ["adjudicated_by", "adjudicated_at", "adjudication_reason", "guidelines_version",
                               "in_sample"]
        got = {key: _row(rows, claim)[key] for key in expected}
        if not name.endswith(".jsonl"):  # empty cells read back as "" in CSV and XLSX
            got = {key: value if value != "" else None for key, value in got.items()}
            assert got == {key: value if value != "" else None for key, value in expected.items()}, name
        else:
            assert got == expected, name
        others = [row for row in rows if int(row["claim_id"]) != claim.pk]
        assert all(not row["adjudicated_by"] and not row["adjudication_reason"] for row in others), name


def _file(tmp_path, run, claim, **edits) -> object:
    """The agreed table exported as JSONL, cut to the adjudicated claim's row, with ``edits``."""
    path = tmp_path / "labels.jsonl"
    call_command("export_labels", "--run", "r", "--project", "team", "-o", str(path), stdout=StringIO())
    row = _row([json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()], claim) | edits
    return read_label_table(json.dumps(row).encode("utf-8") + b"\n", format="jsonl")


def test_an_adjudicated_row_comes_back_unchanged_for_a_reviewer_and_a_lead(lead_site, tmp_path):  # noqa: F811
    """The adjudicated row as exported: for ann (own labels) it changes nothing, although
    its reviewer is blank (before the fix it would have become ann's label); for lea with
    --adjudicate it is the adjudication as it stands (value and adjudication_reason)."""
    run, lea = lead_site
    claim, _ = _adjudicate(run, lea)
    ann = Reviewer.objects.get(username="ann")
    table_file = _file(tmp_path, run, claim)
    assert table_file.issues == [] and table_file.rows[0].adjudicated_by == "lea"
    for who, mode in ((ann, {}), (lea, {"adjudicate": True})):
        preview = label_table_import_preview(run=run, reviewer=who, table_file=table_file, **mode)
        assert (preview.issues, preview.changes, preview.unchanged) == ([], [], 1), who.username


def test_an_edited_adjudicated_row_is_a_leads_new_adjudication_not_a_reviewers_label(lead_site, tmp_path):  # noqa: F811
    """The row turned UNSUPPORTED with a new adjudication_reason: ann's import is refused
    (row 1, label, naming lea's adjudication), nothing written; lea's --adjudicate import
    records her new adjudication, the reason taken from adjudication_reason."""
    run, lea = lead_site
    claim, first = _adjudicate(run, lea)
    ann = Reviewer.objects.get(username="ann")
    table_file = _file(tmp_path, run, claim, label="UNSUPPORTED", adjudication_reason="on second reading, no")
    with pytest.raises(LabelImportError) as refused:
        label_table_import_apply(run=run, reviewer=ann, table_file=table_file)
    ((line, field, reason),) = [(i.line, i.field, i.reason) for i in refused.value.issues]
    assert (line, field) == (1, "label") and reason.startswith("the row shows lea's adjudication, not a reviewer's")
    assert Claim.objects.get(pk=claim.pk).labels.filter(reviewer=ann, is_current=True).get().value == "SUPPORTED"
    label_table_import_apply(run=run, reviewer=lea, table_file=table_file, adjudicate=True)
    current = Adjudication.objects.get(claim=claim, is_current=True)
    assert (current.value, current.reason, current.lead) == ("UNSUPPORTED", "on second reading, no", lea)
    assert current.pk != first.pk


def test_import_labels_command_accepts_a_table_with_the_new_columns(lead_site, tmp_path):  # noqa: F811
    """import_labels (preview) on the whole agreed CSV as lea with --adjudicate: no bad row."""
    run, lea = lead_site
    _adjudicate(run, lea)
    path = tmp_path / "labels.csv"
    call_command("export_labels", "--run", "r", "--project", "team", "-o", str(path), stdout=StringIO())
    out = StringIO()
    call_command("import_labels", str(path), "--run", "r", "--project", "team", "--reviewer", "lea",
                 "--adjudicate", stdout=out)
    # 4 rows: claim 1 of q0000 adjudicated (unchanged), claim 1 of q0001 disputed (blank),
    # claims 2 agreed SUPPORTED by ann and bob (2 would become lea's adjudications).
    assert "preview only: 2 label(s) would change" in out.getvalue()
