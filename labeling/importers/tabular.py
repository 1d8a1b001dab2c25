"""The one reader of spreadsheet files (CSV, XLSX) for every importer: rows of
cell values with their spreadsheet row numbers, no ORM, no meaning attached.

``labeling.importers.answers_table`` and ``labeling.importers.label_table``
both read through here, so a damaged workbook, a file that is not UTF-8 or a
CSV cell over the size limit gets the same clear ``ImportIssue`` (row,
``(file)``, reason) in both, never a traceback. Both check the file's bytes
first (``labeling.importers.content``: a renamed binary, UTF-16 text, a zip
bomb) and stop at the first data row past ``CITELAB_MAX_IMPORT_ROWS``.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterator
from typing import Any

from labeling.importers.content import content_problem, max_rows, not_utf8, too_many_rows, xlsx_problem
from labeling.importers.records import ImportIssue
from labeling.limits import MAX_TEXT_CHARS

# The csv module refuses cells over 131,072 characters by default; a text may
# be as long as MAX_TEXT_CHARS, and anything longer is refused with its row.
MAX_CELL_CHARS = MAX_TEXT_CHARS


class FileProblem(Exception):
    """The file cannot be read on (``issue`` says where and why)."""

    def __init__(self, issue: ImportIssue):
        super().__init__(str(issue))
        self.issue = issue


Row = tuple[int, list[Any]]
# OOXML's escape for a character XML cannot hold (``_x0007_`` is BEL); Excel
# writes a literal "_x" as ``_x005F_x``. openpyxl leaves both as written.
# What the XML parser says of a raw control character (or ``&#7;``) in a worksheet.
_ILLEGAL_CHARACTER = ("not well-formed (invalid token)", "reference to invalid character number")
_OOXML_ESCAPE = re.compile(r"_x([0-9A-Fa-f]{4})_")


def _ooxml_text(value: Any) -> Any:
    """A cell's text as the spreadsheet shows it: ``_xHHHH_`` escapes decoded,
    so that a control character, NUL or lone surrogate hidden in one is seen
    (and refused) by the importer rather than kept as escape text."""
    if not isinstance(value, str) or "_x" not in value:
        return value
    return _OOXML_ESCAPE.sub(lambda match: chr(int(match.group(1), 16)), value)


def csv_rows(data: bytes) -> Iterator[Row]:
    """``(row number, cells)`` for the header (row 1) and every non-blank row
    of a UTF-8 CSV file (byte-order mark allowed); the separator (``,``,
    ``;`` or tab) is the one the header uses most. Cells are strings as
    written. Raises FileProblem for a file that is not CSV text
    (``labeling.importers.content``), text that is not UTF-8, a row the csv
    module cannot read (e.g. a cell longer than MAX_CELL_CHARS) or a data
    row past the row limit."""
    if problem := content_problem(data[:4096], format="csv"):
        raise FileProblem(problem)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise FileProblem(not_utf8(data, exc)) from None
    if not text.strip():
        return
    first_line = text.split("\n", 1)[0]
    delimiter = max([",", ";", "\t"], key=first_line.count)
    # The limit is process-wide in the csv module; set it where it is needed, not at import.
    csv.field_size_limit(MAX_CELL_CHARS)
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    number = data_rows = 0
    limit = max_rows()
    while True:
        try:
            values = next(reader, None)
        except csv.Error as exc:
            reason = (f"a cell is longer than {MAX_CELL_CHARS:,} characters" if "field limit" in str(exc)
                      else f"cannot read the CSV: {exc}")
            raise FileProblem(ImportIssue(number + 1, "(file)", reason)) from None
        if values is None:
            return
        number += 1
        if number == 1 or any(v.strip() for v in values):
            data_rows += number > 1
            if data_rows > limit:
                raise FileProblem(too_many_rows(number))
            yield number, values


def xlsx_rows(data: bytes, *, sheet: str | None = None) -> Iterator[Row]:
    """``(row number, cells)`` for row 1 and every non-blank row of the
    worksheet ``sheet`` (when the workbook has it, else the first one),
    read-only: a formula is read as its text, never evaluated; ``_xHHHH_``
    escapes in text are decoded as Excel decodes them. Raises
    FileProblem for a file that is not a workbook, unzips past the limit
    (``labeling.importers.content``), a damaged worksheet, or a worksheet
    with more data rows than the row limit (told by its declared dimension
    before any row is read, else at the first row past it)."""
    if problem := content_problem(data[:4096], format="xlsx") or xlsx_problem(data):
        raise FileProblem(problem)
    from openpyxl import load_workbook  # 1 s to import: loaded only for a workbook

    try:
        workbook = load_workbook(io.BytesIO(data), read_only=True, data_only=False)
    except Exception as exc:  # openpyxl raises many types for a non-workbook
        reason = f"not a readable .xlsx workbook ({exc.__class__.__name__})"
        raise FileProblem(ImportIssue(1, "(file)", reason)) from None
    try:
        if not workbook.sheetnames:
            raise FileProblem(ImportIssue(1, "(file)", "the workbook has no worksheet"))
        worksheet = workbook[sheet] if sheet in workbook.sheetnames else workbook.worksheets[0]
        limit = max_rows()
        declared = _declared_rows(worksheet)
        if declared is not None and declared - 1 > limit:
            raise FileProblem(ImportIssue(1, "(file)", f"the worksheet {worksheet.title!r} declares {declared:,} "
                                                       f"rows; the limit of one import is {limit:,} rows "
                                                       "(CITELAB_MAX_IMPORT_ROWS): split the file"))
        rows = worksheet.iter_rows(values_only=True)
        number = data_rows = 0
        while True:
            # Read-only openpyxl parses the worksheet XML lazily, row by row:
            # a damaged part fails here, after load_workbook succeeded.
            try:
                values = next(rows, None)
            except Exception as exc:
                if any(text in str(exc) for text in _ILLEGAL_CHARACTER):
                    reason = (f"the worksheet {worksheet.title!r} holds a character no workbook may contain (a "
                              f"control character such as U+0007) in row {number + 1}: remove it and save again")
                else:
                    reason = (f"the worksheet {worksheet.title!r} is damaged and cannot be read "
                              f"({exc.__class__.__name__}): open the file in a spreadsheet program and save it "
                              "again")
                raise FileProblem(ImportIssue(number + 1, "(file)", reason)) from None
            if values is None:
                return
            number += 1
            if number == 1 or any(v is not None and not (isinstance(v, str) and not v.strip()) for v in values):
                data_rows += number > 1
                if data_rows > limit:
                    raise FileProblem(too_many_rows(number))
                yield number, [_ooxml_text(v) for v in values]
    finally:
        workbook.close()


def _declared_rows(worksheet: Any) -> int | None:
    """The last row of the worksheet's ``<dimension ref="A1:P1000001">``, or
    None when it declares none (read-only worksheets read only that tag)."""
    try:
        return worksheet.max_row
    except Exception:  # a damaged or absent dimension: the row count decides
        return None
