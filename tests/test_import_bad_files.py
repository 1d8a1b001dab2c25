"""Bad files, every importer (SPEC §7): answers files (JSON Lines,
CSV, XLSX) and label tables (the web upload). Each case asserts the exact
issue — line, field and reason — and that the row count of every table is
unchanged (``tests.tables.row_counts``), on SQLite and on PostgreSQL.

The files are built here, byte by byte where a spreadsheet program would not
write them: a renamed PDF, UTF-16 text, a truncated workbook, a worksheet
holding a raw control character, a zip bomb (a 2 MB member under a 1 MB
limit), a worksheet declaring 1,000,001 rows."""

from __future__ import annotations

import codecs
import gzip
import io
import json
import random
import re
import zipfile
from collections.abc import Callable

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse
from django.utils.html import escape
from openpyxl import Workbook

from labeling.importers.load import project_for_import, run_import
from labeling.importers.records import ImportFailed
from labeling.models import Answer, Run
from tests.conftest import FIXTURES_DIR
from tests.tables import row_counts

SEED = FIXTURES_DIR / "seed_coverage_support.jsonl"
HEADER = ["question_id", "question", "run", "answer", "passages", "claim", "citations", "label", "justification"]
PASSAGES = json.dumps([{"id": "P1", "source": "manual.md", "text": "The client retries five times."}])


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"


@pytest.fixture
def seeded(db):
    """Project ``seed`` holding the seed example (1 answer, 5 claims, 5 labels):
    every table a refused import could touch already has rows."""
    project = project_for_import(slug="seed")
    run_import(project=project, source=SEED)
    return project


# ----------------------------------------------------------------- builders


def answer_line(question_id: str = "q1", **overrides) -> dict:
    line = {"question_id": question_id, "question": "How?", "run": "r1", "answer": "It retries five times [P1].",
            "passages": json.loads(PASSAGES),
            "claims": [{"text": "It retries five times.", "citations": [{"passage_id": "P1"}]}]}
    line.update(overrides)
    return line


def jsonl_bytes(*lines: dict | str) -> bytes:
    return "".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines).encode()


def table_row(question_id: str = "q1", claim: str = "It retries five times.", **cells: object) -> list[object]:
    values = {"question_id": question_id, "question": "How?", "run": "r1", "answer": "It retries five times [P1].",
              "passages": PASSAGES, "claim": claim, "citations": "P1", "label": "", "justification": ""}
    values.update(cells)
    return [values[name] for name in HEADER]


def csv_text(rows: list[list[object]]) -> str:
    import csv

    out = io.StringIO()
    csv.writer(out).writerows(rows)
    return out.getvalue()


def csv_bytes(rows: list[list[object]]) -> bytes:
    return csv_text(rows).encode()


def xlsx_bytes(rows: list[list[object]], *, title: str = "Sheet") -> bytes:
    workbook = Workbook()
    workbook.active.title = title
    for row in rows:
        workbook.active.append(row)
    out = io.BytesIO()
    workbook.save(out)
    return out.getvalue()


def rezip(data: bytes, change: Callable[[str, bytes], bytes], add: dict[str, bytes] | None = None) -> bytes:
    """``data`` (a ZIP) with every member passed through ``change`` and ``add`` appended."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            target.writestr(info.filename, change(info.filename, source.read(info.filename)))
        for name, member in (add or {}).items():
            target.writestr(name, member)
    return out.getvalue()


def in_worksheet(old: str, new: str) -> Callable[[str, bytes], bytes]:
    def change(name: str, member: bytes) -> bytes:
        return member.replace(old.encode(), new.encode()) if name == "xl/worksheets/sheet1.xml" else member
    return change


def good_xlsx() -> bytes:
    return xlsx_bytes([HEADER, table_row()])


def refused_answers(project, data: bytes, fmt: str) -> list[tuple[int, str, str]]:
    """The issues of importing ``data`` as ``fmt``; fails unless nothing was written."""
    before = row_counts()
    with pytest.raises(ImportFailed) as failure:
        run_import(project=project, source=data, format=fmt)
    assert row_counts() == before
    return [(issue.line, issue.field, issue.reason) for issue in failure.value.issues]


# ------------------------------------------------------ answers: JSON Lines

UTF16_ADVICE = ("save it as UTF-8 (in Excel: 'CSV UTF-8'; in an editor: encoding UTF-8) and import it again")
NOISE = random.Random(14).randbytes(4096)  # seeded: the same bytes every run

JSONL_CASES = {
    "pdf renamed": (b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n",
                    [(1, "(file)", "not a JSONL text file: it is a PDF document")]),
    "workbook renamed": (None, [(1, "(file)", "not a JSONL text file: it is a ZIP archive (an .xlsx workbook is "
                                              "one): name it .xlsx")]),
    "gzip": (gzip.compress(jsonl_bytes(answer_line()), mtime=0),
             [(1, "(file)", "not a JSONL text file: it is a gzip archive: unpack it first")]),
    "utf-16 with bom": (codecs.BOM_UTF16_LE + jsonl_bytes(answer_line()).decode().encode("utf-16-le"),
                        [(1, "(file)", f"the file is UTF-16 text: {UTF16_ADVICE}")]),
    "utf-16 without bom": (jsonl_bytes(answer_line()).decode().encode("utf-16-be"),
                           [(1, "(file)", f"the file is UTF-16 text: {UTF16_ADVICE}")]),
    "utf-32": (codecs.BOM_UTF32_LE + jsonl_bytes(answer_line()).decode().encode("utf-32-le"),
               [(1, "(file)", f"the file is UTF-32 text: {UTF16_ADVICE}")]),
    "random bytes": (NOISE, [(1, "(file)", f"not a JSONL text file: its first 4,096 bytes hold "
                                           f"{sum(b < 32 and b not in (9, 10, 12, 13, 27) for b in NOISE):,} "
                                           "control bytes (binary data)")]),
    # 'caf\xe9' is Latin-1: byte 43 of line 2 ({"question_id": "q2", "question": "caf…).
    "latin-1 line": (jsonl_bytes(answer_line()) + b'{"question_id": "q2", "question": "caf\xe9", "run": "r1"}\n',
                     [(2, "(line)", "not UTF-8: invalid continuation byte at byte 39")]),
    # Line 2 is 273 characters; cut by 39 (and its line feed) it ends after
    # `"It retries five times.",`, so JSON expects the next key at column 235.
    "truncated": (jsonl_bytes(answer_line(), answer_line("q2"))[:-40],
                  [(2, "(line)", "invalid JSON: Expecting property name enclosed in double quotes at column 235")]),
    "nul escape": (jsonl_bytes(answer_line(answer="It retries\u0000 five times [P1].")),
                   [(1, "answer", "contains the control character U+0000 at character 11, which cannot be stored: "
                                  "remove it")]),
    # `"answer": "It retries` ends at column 76 of the line: the NUL is column 77.
    "raw nul byte": (jsonl_bytes(answer_line()).replace(b"It retries five", b"It retries\x00five", 1),
                     [(1, "(line)", "invalid JSON: Invalid control character at at column 77")]),
    "lone surrogate": (jsonl_bytes(answer_line(question="Why\ud800?")),
                       [(1, "question", "contains a lone surrogate U+D800 at character 4 (not a character): fix "
                                        "the file's encoding")]),
    "bell in a claim": (jsonl_bytes(answer_line(claims=[{"text": "It\x07 retries.", "citations": ["P1"]}])),
                        [(1, "claims[0].text", "contains the control character U+0007 at character 3, which "
                                               "cannot be stored: remove it")]),
    "nested too deeply": (b'{"question_id": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n",
                          [(1, "(line)", "invalid JSON: nested too deeply")]),
    "answer too long": (jsonl_bytes(answer_line(answer="x" * 1_000_001)),
                        [(1, "answer", "longer than 1000000 characters")]),
    "array, not object": (b"[1, 2, 3]\n", [(1, "(line)", "expected a JSON object")]),
}


@pytest.mark.parametrize("case", list(JSONL_CASES))
def test_bad_answers_jsonl_is_refused_naming_line_and_field(seeded, case):
    data, expected = JSONL_CASES[case]
    if data is None:
        data = good_xlsx()

    assert refused_answers(seeded, data, "jsonl") == expected


def test_answers_jsonl_past_the_row_limit_stops_at_the_first_line_over_it(seeded, settings):
    """Limit 3: lines 1, 2, 4 and 5 hold answers (line 3 is blank, not
    counted), so the 4th answer, on line 5, is the first past the limit."""
    settings.CITELAB_MAX_IMPORT_ROWS = 3
    data = jsonl_bytes(answer_line("q1"), answer_line("q2"), "", answer_line("q3"), answer_line("q4"))

    assert refused_answers(seeded, data, "jsonl") == [
        (5, "(file)", "more than 3 rows: the limit of one import (CITELAB_MAX_IMPORT_ROWS); split the file")]


# ------------------------------------------------------------- answers: CSV

CSV_CASES = {
    "png renamed": (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", [(1, "(file)", "not a CSV text file: it is a PNG image")]),
    "old xls": (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(504),
                [(1, "(file)", "not a CSV text file: it is an old Excel .xls file or a password-protected workbook: "
                               "save it as .xlsx without a password")]),
    "utf-16 (Excel 'Unicode text')": (codecs.BOM_UTF16_LE + csv_text([HEADER, table_row()]).encode("utf-16-le"),
                                      [(1, "(file)", f"the file is UTF-16 text: {UTF16_ADVICE}")]),
    # 'caf\xe9' on line 3: row 2 is fine; byte 15 of line 3 is \xe9 ("q2,How?,r1,caf" is 14 bytes).
    "latin-1": (csv_bytes([HEADER, table_row()]) + b"q2,How?,r1,caf\xe9,[],c,,,\r\n",
                [(3, "(file)", "not UTF-8 text: invalid continuation byte at byte 15 of line 3; save the file as "
                               "UTF-8 (in Excel: 'CSV UTF-8')")]),
    "header only": (csv_bytes([HEADER]), [(1, "(file)", "the file has no rows below the header")]),
    "header and blank rows": (csv_bytes([HEADER, [""] * 9, [""] * 9]),
                              [(1, "(file)", "the file has no rows below the header")]),
    "empty": (b"", [(1, "(file)", "the file is empty")]),
    "no question_id column": (csv_bytes([["id", "text"], ["1", "x"]]),
                              [(1, "(header)", "no 'question_id' column: see the answers table columns")]),
    "cell past 1,000,000 characters": (csv_bytes([HEADER, table_row(), table_row("q2", claim="x" * 1_000_001)]),
                                       [(3, "(file)", "a cell is longer than 1,000,000 characters")]),
    "raw nul in a cell": (csv_bytes([HEADER, table_row(claim="It\x00 retries.")]),
                          [(2, "claim", "contains the control character U+0000 at character 3, which cannot be "
                                        "stored: remove it")]),
    # The open quote swallows the rest of row 3 into its question cell.
    "unterminated quote": (csv_bytes([HEADER, table_row()]) + b'q2,"How?,r1,a,[],c,P1,,\n',
                           [(3, "run", "missing (or pass --run)"), (3, "answer", "missing")]),
    "bad passages json": (csv_bytes([HEADER, table_row(passages="[{")]),
                          [(2, "passages", "invalid JSON: Expecting property name enclosed in double quotes at "
                                           "column 3")]),
}


@pytest.mark.parametrize("case", list(CSV_CASES))
def test_bad_answers_csv_is_refused_naming_row_and_column(seeded, case):
    data, expected = CSV_CASES[case]

    assert refused_answers(seeded, data, "csv") == expected


def test_answers_csv_past_the_row_limit_is_refused(seeded, settings):
    """Limit 2 data rows: the header is row 1, the 3rd data row is row 4."""
    settings.CITELAB_MAX_IMPORT_ROWS = 2
    data = csv_bytes([HEADER, table_row("q1"), table_row("q2"), table_row("q3")])

    assert refused_answers(seeded, data, "csv") == [
        (4, "(file)", "more than 2 rows: the limit of one import (CITELAB_MAX_IMPORT_ROWS); split the file")]


def test_csv_cell_past_the_csv_modules_131072_default_is_imported(seeded):
    """The csv module's default field limit is 131,072 characters; a 200,000
    character answer is a legal text (limit 1,000,000) and is stored whole."""
    answer = "It retries five times [P1]. " + "x" * 200_000
    data = csv_bytes([HEADER, table_row(answer=answer)])

    run_import(project=seeded, source=data, format="csv")

    assert len(Answer.objects.get(run__name="r1").text) == 200_028


def test_utf8_with_byte_order_mark_is_read(seeded):
    data = codecs.BOM_UTF8 + csv_bytes([HEADER, table_row()])

    run_import(project=seeded, source=data, format="csv")

    assert Run.objects.get(project=seeded, name="r1").answers.count() == 1


# ------------------------------------------------------------ answers: XLSX

def xlsx_case(name: str) -> bytes:
    good = good_xlsx()
    return {
        "truncated": good[: len(good) // 2],
        "csv renamed": csv_bytes([HEADER, table_row()]),
        "empty": b"",
        "zip without a workbook": _zip({"notes.txt": b"hi"}),
        "raw control character": rezip(good, in_worksheet("It retries five times.</t>", "It\x07 retries.</t>")),
        "character reference to U+0007": rezip(good, in_worksheet("It retries five times.</t>",
                                                                  "It&#7; retries.</t>")),
        "_x0000_ escape": xlsx_bytes([HEADER, table_row(claim="It_x0000_ retries.")]),
        "_xD800_ escape": xlsx_bytes([HEADER, table_row(claim="It _xD800_ retries.")]),
        "_x0007_ escape": xlsx_bytes([HEADER, table_row(claim="It_x0007_ retries.")]),
        "header only": xlsx_bytes([HEADER]),
        "declares 1,000,001 rows": rezip(good, in_worksheet('<dimension ref="A1:I2"/>',
                                                            '<dimension ref="A1:I1000001"/>')),
        "old xls": b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(504),
    }[name]


def _zip(members: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for name, member in members.items():
            archive.writestr(name, member)
    return out.getvalue()


XLSX_CASES = {
    "truncated": [(1, "(file)", "not a readable .xlsx workbook: the ZIP archive is damaged or truncated (File is "
                                "not a zip file)")],
    "csv renamed": [(1, "(file)", "not an .xlsx workbook: the file is plain text (a CSV file? name it .csv)")],
    "empty": [(1, "(file)", "the file is empty, not an .xlsx workbook")],
    "zip without a workbook": [(1, "(file)", "not an .xlsx workbook: a ZIP archive without xl/workbook.xml")],
    "raw control character": [(2, "(file)", "the worksheet 'Sheet' holds a character no workbook may contain (a "
                                            "control character such as U+0007) in row 2: remove it and save again")],
    "character reference to U+0007": [(2, "(file)", "the worksheet 'Sheet' holds a character no workbook may contain "
                                                    "(a control character such as U+0007) in row 2: remove it and "
                                                    "save again")],
    "_x0000_ escape": [(2, "claim", "contains the control character U+0000 at character 3, which cannot be stored: "
                                    "remove it")],
    "_xD800_ escape": [(2, "claim", "contains a lone surrogate U+D800 at character 4 (not a character): fix the "
                                    "file's encoding")],
    "_x0007_ escape": [(2, "claim", "contains the control character U+0007 at character 3, which cannot be stored: "
                                    "remove it")],
    "header only": [(1, "(file)", "the file has no rows below the header")],
    "declares 1,000,001 rows": [(1, "(file)", "the worksheet 'Sheet' declares 1,000,001 rows; the limit of one "
                                              "import is 500,000 rows (CITELAB_MAX_IMPORT_ROWS): split the file")],
    "old xls": [(1, "(file)", "not an .xlsx workbook: the file is an old Excel .xls file or a password-protected "
                              "workbook: save it as .xlsx without a password")],
}


@pytest.mark.parametrize("case", list(XLSX_CASES))
def test_bad_answers_xlsx_is_refused_naming_row_and_column(seeded, case):
    assert refused_answers(seeded, xlsx_case(case), "xlsx") == XLSX_CASES[case]


def test_workbook_that_unzips_past_the_limit_is_refused_before_parsing(seeded, settings):
    """A 2 MiB member of zeros deflates to about 2 KB; under a 1 MiB limit the
    workbook (2 MiB + its own few KB unzipped) is refused, rounded to MB."""
    settings.CITELAB_MAX_UNZIPPED_BYTES = 1024 * 1024
    bomb = rezip(good_xlsx(), lambda _n, member: member, add={"xl/media/padding.bin": bytes(2 * 1024 * 1024)})
    assert len(bomb) < 20_000

    assert refused_answers(seeded, bomb, "xlsx") == [
        (1, "(file)", "the workbook unzips to 2 MB; the limit is 1 MB (CITELAB_MAX_UNZIPPED_MB)")]


def test_xlsx_past_the_row_limit_without_a_dimension_is_refused_while_reading(seeded, settings):
    """No ``<dimension>`` tag to read: rows are counted; limit 2, so the 3rd
    data row (row 4) is the first past it."""
    settings.CITELAB_MAX_IMPORT_ROWS = 2
    data = rezip(xlsx_bytes([HEADER, table_row("q1"), table_row("q2"), table_row("q3")]),
                 in_worksheet('<dimension ref="A1:I4"/>', ""))

    assert refused_answers(seeded, data, "xlsx") == [
        (4, "(file)", "more than 2 rows: the limit of one import (CITELAB_MAX_IMPORT_ROWS); split the file")]


def test_import_answers_command_names_the_problem_and_writes_nothing(seeded, tmp_path):
    path = tmp_path / "answers.csv"
    path.write_bytes(codecs.BOM_UTF16_LE + csv_text([HEADER, table_row()]).encode("utf-16-le"))
    before = row_counts()
    errors = io.StringIO()

    with pytest.raises(CommandError, match=re.escape(f"1 problem(s) in {path}; nothing was imported")):
        call_command("import_answers", str(path), project="seed", stderr=errors)

    assert errors.getvalue() == f"{path}: line 1: (file): the file is UTF-16 text: {UTF16_ADVICE}\n"
    assert row_counts() == before


# ------------------------------------------------------ label table uploads


@pytest.fixture
def lead(client, seeded):
    from tests.factories import ReviewerFactory

    lead = ReviewerFactory(username="lena")
    seeded.members.add(lead)
    client.force_login(lead)
    return lead


def label_import_url() -> str:
    return reverse("label_import", kwargs={"project_slug": "seed", "run_name": "seed-coverage-support"})


def upload(data: bytes, name: str) -> io.BytesIO:
    handle = io.BytesIO(data)
    handle.name = name
    return handle


LABEL_HEADER = ["claim_id", "label", "justification"]
UPLOAD_CASES = {
    "pdf named .xlsx": (b"%PDF-1.4\n", "labels.xlsx", "not an .xlsx workbook: the file is a PDF document"),
    "workbook named .csv": (None, "labels.csv",
                            "not a CSV text file: it is a ZIP archive (an .xlsx workbook is one): name it .xlsx"),
    "utf-16 csv": (codecs.BOM_UTF16_LE + "claim_id,label\r\n1,SUPPORTED\r\n".encode("utf-16-le"), "labels.csv",
                   f"the file is UTF-16 text: {UTF16_ADVICE}"),
    "gzip named .jsonl": (gzip.compress(b'{"claim_id": 1, "label": "SUPPORTED"}\n', mtime=0), "labels.jsonl",
                          "not a JSONL text file: it is a gzip archive: unpack it first"),
    "truncated workbook": (b"PK\x03\x04\x14\x00\x00\x00\x08\x00", "labels.xlsx",
                           "not a readable .xlsx workbook: the ZIP archive is damaged or truncated (File is not a "
                           "zip file)"),
    "latin-1 csv": (b"claim_id,label,justification\r\n1,SUPPORTED,caf\xe9\r\n", "labels.csv",
                    "not UTF-8 text: invalid continuation byte at byte 16 of line 2; save the file as UTF-8 (in "
                    "Excel: 'CSV UTF-8')"),
}


@pytest.mark.parametrize("case", list(UPLOAD_CASES))
def test_bad_label_table_upload_shows_why_and_stores_nothing(client, lead, settings, case):
    data, name, message = UPLOAD_CASES[case]
    if data is None:
        data = xlsx_bytes([LABEL_HEADER, [1, "SUPPORTED", ""]], title="Labels")
    before = row_counts()

    response = client.post(label_import_url(), {"file": upload(data, name)})

    assert response.status_code == 200
    page = response.content.decode()
    assert f'<p class="message error" role="alert">{escape(message)}</p>' in page
    assert 'name="token"' not in page
    assert row_counts() == before
    assert not (settings.MEDIA_ROOT / "label_imports").exists()


def test_label_table_upload_past_the_row_limit_is_refused(client, lead, settings):
    settings.CITELAB_MAX_IMPORT_ROWS = 2
    data = b"claim_id,label\r\n1,SUPPORTED\r\n2,SUPPORTED\r\n3,SUPPORTED\r\n"
    before = row_counts()

    page = client.post(label_import_url(), {"file": upload(data, "labels.csv")}).content.decode()

    assert ('<p class="message error" role="alert">more than 2 rows: the limit of one import '
            "(CITELAB_MAX_IMPORT_ROWS); split the file</p>") in page
    assert row_counts() == before


def test_label_table_upload_larger_than_the_limit_is_refused_before_it_is_read(client, lead, settings):
    """Limit 1,000 bytes: the request announces 20,000+ bytes of body, so the
    view refuses it from its Content-Length without parsing the upload."""
    settings.CITELAB_MAX_UPLOAD_BYTES = 1000
    before = row_counts()

    page = client.post(label_import_url(), {"file": upload(b"x" * 20_000, "labels.csv")}).content.decode()

    assert ('<p class="message error" role="alert">The upload is larger than the limit of 1000\xa0bytes '
            "(CITELAB_MAX_UPLOAD_MB).</p>") in page
    assert row_counts() == before


# ------------------------------------------- public datasets (import_dataset)

def refused_dataset(project, fmt: str, files: list[tuple[str, bytes]]) -> list[tuple[str, int, str, str]]:
    """The issues of importing ``files`` (name, bytes) as dataset ``fmt``; fails unless nothing was written."""
    from labeling.importers.datasets.common import SourceFile
    from labeling.importers.datasets.load import dataset_import

    before = row_counts()
    with pytest.raises(ImportFailed) as failure:
        dataset_import(project=project, format=fmt, files=[SourceFile(name, data) for name, data in files])
    assert row_counts() == before
    return [(issue.file, issue.line, issue.field, issue.reason) for issue in failure.value.issues]


EXPERTQA_LINE = {"question": "Why?", "annotator_id": "e1", "answers": {"rr_gs_gpt4": {
    "answer_string": "Because [1].", "annotator_id": "a1",
    "claims": [{"claim_string": "Because [1].", "evidence": ["[1] https://x.example The reason."],
                "support": "Complete", "worthiness": "Yes"}]}}}
LFQA_DOCS = json.dumps([{"question_id": 1, "question": "Why?", "docs": [{"doc_id": "d0", "title": "T", "text": "X."}]}])
RAGTRUTH_SOURCE = json.dumps({"source_id": "s1", "task_type": "QA", "source": "MARCO",
                              "source_info": {"question": "Why?", "passages": "passage 1: The reason."},
                              "prompt": "Answer"}) + "\n"
RAGTRUTH_RESPONSE = {"id": "r1", "source_id": "s1", "model": "m", "labels": [], "response": "Because."}


def expertqa_with(**claim) -> bytes:
    line = json.loads(json.dumps(EXPERTQA_LINE))
    line["answers"]["rr_gs_gpt4"]["claims"][0].update(claim)
    return jsonl_bytes(line)


# Each case: format, files (name, bytes), then the issues (file, line, field, reason).
DATASET_CASES = {
    "expertqa: pdf renamed": ("expertqa", [("r2.jsonl", b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")],
                              [("r2.jsonl", 1, "(file)", "not a JSONL text file: it is a PDF document")]),
    "expertqa: utf-16": ("expertqa", [("r2.jsonl", codecs.BOM_UTF16_LE + jsonl_bytes(EXPERTQA_LINE).decode()
                                       .encode("utf-16-le"))],
                         [("r2.jsonl", 1, "(file)", f"the file is UTF-16 text: {UTF16_ADVICE}")]),
    "expertqa: not json": ("expertqa", [("r2.jsonl", jsonl_bytes(EXPERTQA_LINE) + b"{oops\n")],
                           [("r2.jsonl", 2, "(line)", "invalid JSON: Expecting property name enclosed in double "
                                                      "quotes at column 2")]),
    "expertqa: unknown support": ("expertqa", [("r2.jsonl", expertqa_with(support="Mostly"))],
                                  [("r2.jsonl", 1, "answers.rr_gs_gpt4.claims[0].support",
                                    "unknown value 'Mostly' (expected one of 'Complete', 'Partial', 'Incomplete', "
                                    "'Missing', 'N/A', None)")]),
    "expertqa: evidence without its number": ("expertqa", [("r2.jsonl", expertqa_with(evidence=["https://x.example"]))],
                                              [("r2.jsonl", 1, "answers.rr_gs_gpt4.claims[0].evidence[0]",
                                                "expected '[n] URL passage', got 'https://x.example'")]),
    "expertqa: no question": ("expertqa", [("r2.jsonl", jsonl_bytes({"answers": {}}))],
                              [("r2.jsonl", 1, "question", "missing")]),
    "expertqa: a control character in a claim": (
        "expertqa", [("r2.jsonl", expertqa_with(claim_string="Because\x07 [1]."))],
        [("r2.jsonl", 1, "claims[0].text", "contains the control character U+0007 at character 8, which cannot be "
                                           "stored: remove it")]),
    "lfqa: gzip": ("lfqa-verification", [("annotations-x.json", gzip.compress(b"[]", mtime=0)),
                                         ("docs-webgpt.json", LFQA_DOCS.encode())],
                   [("annotations-x.json", 1, "(file)", "not a JSON text file: it is a gzip archive: unpack it "
                                                        "first")]),
    "lfqa: broken json": ("lfqa-verification", [("annotations-x.json", b'[\n {"question_id": 1,\n'),
                                                ("docs-webgpt.json", LFQA_DOCS.encode())],
                          [("annotations-x.json", 3, "(file)", "invalid JSON: Expecting property name enclosed in "
                                                               "double quotes at column 1")]),
    "lfqa: an object, not a list": ("lfqa-verification", [("docs-webgpt.json", b'{"docs": []}')],
                                    [("docs-webgpt.json", 1, "(file)", "expected a JSON list of questions (an "
                                                                       "annotations or a docs file)")]),
    "ragtruth: a line that is neither": ("ragtruth", [("response.jsonl", jsonl_bytes({"id": "1"}))],
                                         [("response.jsonl", 1, "(line)", "neither a response (no 'response' key) "
                                                                          "nor a source (no 'source_info' key): give "
                                                                          "dataset/response.jsonl and "
                                                                          "dataset/source_info.jsonl")]),
    "ragtruth: a source given twice": ("ragtruth", [("source_info.jsonl", (RAGTRUTH_SOURCE * 2).encode()),
                                                    ("response.jsonl", jsonl_bytes(RAGTRUTH_RESPONSE))],
                                       [("source_info.jsonl", 2, "source_id",
                                         "source 's1' is also on line 1 of source_info.jsonl")]),
    "ragtruth: unknown task": ("ragtruth", [("source_info.jsonl", RAGTRUTH_SOURCE.replace('"QA"', '"Chat"').encode()),
                                            ("response.jsonl", jsonl_bytes(RAGTRUTH_RESPONSE))],
                               [("source_info.jsonl", 1, "task_type",
                                 "unknown task type 'Chat' (expected QA, Summary or Data2txt)")]),
    "alce: a list, not an object": ("alce", [("human_eval.json", b"[]")],
                                    [("human_eval.json", 1, "(file)", "expected a JSON object: dataset → model → "
                                                                      "question id → output")]),
    "alce: unknown score": ("alce", [("human_eval.json", json.dumps({"eli5": {"m.json": {"7": {
        "question": "Why?", "output": "Because [1].", "sentences": [
            {"text": "Because [1].", "sentence_recall_score": 1, "sentence_precision_score": 1,
             "citations": [{"title": "T", "text": "X", "citation_precision_score": 3}]}]}}}}, indent=1).encode())],
                            [("human_eval.json", 4, "eli5.m.json.7.sentences[0].citations[0].citation_precision_score",
                              "unknown value 3 (expected one of 2, 1, 0)")]),
    "liu2023: not utf-8": ("liu2023", [("human.jsonl", b'{"query": "caf\xe9"}\n')],
                           [("human.jsonl", 1, "(file)", "not UTF-8 text: invalid continuation byte at byte 15 of "
                                                         "line 1; save the file as UTF-8 (in Excel: 'CSV UTF-8')")]),
    "hagrid: a quote given twice": ("hagrid", [("dev.jsonl", jsonl_bytes(
        {"query_id": "1", "query": "Why?", "quotes": [{"idx": 1, "docid": "a", "text": "X"},
                                                      {"idx": 1, "docid": "b", "text": "Y"}], "answers": []}))],
                                    [("dev.jsonl", 1, "quotes[1].idx", "quote 1 is given twice")]),
}


@pytest.mark.parametrize("case", list(DATASET_CASES))
def test_bad_dataset_files_are_refused_naming_file_line_and_field(seeded, case):
    fmt, files, expected = DATASET_CASES[case]

    assert refused_dataset(seeded, fmt, files) == expected


def test_a_dataset_past_the_row_limit_stops_at_the_first_line_over_it(seeded, settings):
    settings.CITELAB_MAX_IMPORT_ROWS = 2
    data = jsonl_bytes(*[EXPERTQA_LINE | {"question": f"Why {n}?"} for n in range(3)])

    assert refused_dataset(seeded, "expertqa", [("r2.jsonl", data)]) == [
        ("r2.jsonl", 3, "(file)", "more than 2 rows: the limit of one import (CITELAB_MAX_IMPORT_ROWS); split the "
                                  "file")]


def test_import_dataset_command_prints_every_issue_with_its_file(seeded, tmp_path):
    path = tmp_path / "r2.jsonl"
    path.write_bytes(expertqa_with(support="Mostly") + expertqa_with(support="Sometimes"))
    err = io.StringIO()
    with pytest.raises(CommandError, match="2 problem"):
        call_command("import_dataset", "--format", "expertqa", str(path), "--project", "seed", stderr=err)
    assert err.getvalue().splitlines() == [
        "r2.jsonl: line 1: answers.rr_gs_gpt4.claims[0].support: unknown value 'Mostly' (expected one of "
        "'Complete', 'Partial', 'Incomplete', 'Missing', 'N/A', None)",
        "r2.jsonl: line 2: answers.rr_gs_gpt4.claims[0].support: unknown value 'Sometimes' (expected one of "
        "'Complete', 'Partial', 'Incomplete', 'Missing', 'N/A', None)"]


# ---------------------------------------------------- traces (import_traces)

TRACE_CASES = {
    "openinference: gzip": ("openinference", gzip.compress(b"[]", mtime=0),
                            [(1, "(file)", "not a JSON text file: it is a gzip archive: unpack it first")]),
    "openinference: utf-16": ("openinference", codecs.BOM_UTF16_LE + "[]".encode("utf-16-le"),
                              [(1, "(file)", f"the file is UTF-16 text: {UTF16_ADVICE}")]),
    "openinference: a list of numbers": ("openinference", b"[1, 2]",
                                         [(1, "(line)", "expected a span: a JSON object"),
                                          (1, "(line)", "expected a span: a JSON object")]),
    "langfuse: broken json lines": ("langfuse", b'{"id": "o1", "traceId": "t1", "type": "GENERATION"}\n{"id":\n',
                                    [(2, "(line)", "invalid JSON: Expecting value at column 7")]),
    "langfuse: observations not a list": ("langfuse", json.dumps({"id": "t1", "observations": {}}).encode(),
                                          [(1, "observations", "must be a list of observations")]),
    "langsmith: a run without its id": ("langsmith", jsonl_bytes({"trace_id": "t1", "run_type": "llm"}),
                                        [(1, "id", "missing: every run names itself and its trace")]),
    "langsmith: no answer anywhere": ("langsmith", jsonl_bytes({"id": "r1", "trace_id": "t1", "run_type": "chain",
                                                                "inputs": {"question": "Why?"}}),
                                      [(1, "(file)", "no trace holds an answer to review (span r1 (trace t1): no LLM "
                                                     "span with an output in this trace: nothing to review; the "
                                                     "trace is left out)")]),
}


@pytest.mark.parametrize("case", list(TRACE_CASES))
def test_bad_trace_exports_are_refused_naming_line_and_field(seeded, case):
    from labeling.importers.datasets.common import SourceFile
    from labeling.importers.traces.load import trace_import

    fmt, data, expected = TRACE_CASES[case]
    before = row_counts()
    with pytest.raises(ImportFailed) as failure:
        trace_import(project=seeded, format=fmt, file=SourceFile("export.json", data), run_name="traces")
    assert row_counts() == before
    assert [(i.line, i.field, i.reason) for i in failure.value.issues] == expected
    assert {i.file for i in failure.value.issues} == {"export.json"}
