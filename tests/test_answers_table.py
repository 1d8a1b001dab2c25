"""Answers files given as tables (labeling.importers.answers_table): one row per
claim in CSV or XLSX imports like the JSON Lines file, and a bad row is named by
its spreadsheet row."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.core.management import CommandError, call_command
from openpyxl import Workbook

from labeling.exports.label_table import label_table_frame, table_claim_metrics
from labeling.importers.load import run_import
from labeling.importers.records import ImportFailed
from labeling.models import Answer, Run
from tests.label_table_files import SEED


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
