"""Label table files for the import tests: the seed run they work on, its
exported files edited the way a reviewer edits them offline, and hostile or
damaged files. Shared by test_label_table_parse.py, test_label_table_apply.py,
test_label_import_page.py, test_import_labels_command.py and
test_import_attribution.py."""

from __future__ import annotations

import csv
import io
import json
import zipfile
from datetime import UTC, datetime

from django.core.files.storage import default_storage
from django.urls import reverse
from openpyxl import Workbook, load_workbook

from labeling.exports.csv_jsonl import csv_cell
from labeling.importers.label_table import read_label_table
from labeling.models import Claim, Label, LabelValue, Reviewer, Run
from labeling.tables.export import label_table_export
from labeling.tables.import_preview import label_table_import_preview
from tests.conftest import FIXTURES_DIR
from tests.factories import ClaimFactory

SEED = FIXTURES_DIR / "seed_coverage_support.jsonl"
EXPORTED_AT = datetime(2025, 1, 31, 9, 15, tzinfo=UTC)


def import_seed_run() -> Run:
    """Seed example (5 cited claims labeled by seed-reviewer: 1, 2, 4
    SUPPORTED, 3, 5 UNSUPPORTED) plus claim 6, which cites nothing; project ``seed``."""
    from labeling.importers.load import project_for_import, run_import

    project = project_for_import(slug="seed")
    run_import(project=project, source=SEED)
    run = Run.objects.select_related("project").get(project=project, name="seed-coverage-support")
    ClaimFactory(answer=run.answers.get(), index=6, text="Backups are kept for a month.")
    return run


def export(run: Run, fmt: str, **kwargs) -> bytes:
    """The run's label table as a ``fmt`` file (xlsx, csv or jsonl), as ``export_labels`` writes it."""
    out = io.BytesIO()
    label_table_export(run=run, fmt=fmt, out=out, **kwargs)
    return out.getvalue()


def claim_ids(run: Run) -> dict[int, int]:
    """``{claim index: claim id}`` of the run's claims."""
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
    """The rows of the workbook's Labels sheet, each a ``{column: value}`` dict."""
    sheet = load_workbook(io.BytesIO(data), read_only=True)["Labels"]
    rows = list(sheet.iter_rows(values_only=True))
    return [dict(zip(rows[0], row, strict=True)) for row in rows[1:]]


def preview_of(run: Run, reviewer, data: bytes, fmt: str):
    """The import preview of ``data`` (a ``fmt`` file) for ``reviewer``: nothing written."""
    return label_table_import_preview(run=run, reviewer=reviewer, table_file=read_label_table(data, format=fmt))


def import_url(run: Run, name: str = "label_import") -> str:
    """The address of the run's label import page (or of ``name``, another page of the run)."""
    return reverse(name, kwargs={"project_slug": run.project.slug, "run_name": run.name})


def upload(data: bytes, name: str) -> io.BytesIO:
    """``data`` as an uploaded file named ``name``."""
    handle = io.BytesIO(data)
    handle.name = name
    return handle


def csv_bytes(rows: list[list[object]]) -> bytes:
    """``rows`` as the bytes of a CSV file."""
    out = io.StringIO()
    csv.writer(out).writerows(rows)
    return out.getvalue().encode()


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


def header_only_xlsx() -> bytes:
    """A workbook whose Labels sheet holds the header row and nothing below it."""
    workbook = Workbook()
    workbook.active.title = "Labels"
    workbook.active.append(["claim_id", "label", "justification"])
    out = io.BytesIO()
    workbook.save(out)
    return out.getvalue()


def empty_xlsx() -> bytes:
    """A workbook with one empty sheet."""
    out = io.BytesIO()
    Workbook().save(out)
    return out.getvalue()


def stored_uploads() -> list[str]:
    """The names of the files stored for import previews (``label_imports/``)."""
    try:
        return sorted(default_storage.listdir("label_imports")[1])
    except FileNotFoundError:
        return []


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
