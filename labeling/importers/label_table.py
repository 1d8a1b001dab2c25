"""Label table file (XLSX, CSV, JSONL; SPEC §6) → LabelTableRow records, no ORM.

The file is a label table as ``labeling.exports`` writes it, possibly edited
offline. Columns are found by header name (case and spaces ignored, so
``Claim ID`` is ``claim_id``); order does not matter and unknown columns are
ignored. A row names its claim by ``claim_id``, or — in files made by other
tools — by ``question_id`` + ``claim_index``. Read columns:

- ``label`` (required): SUPPORTED / UNSUPPORTED / UNCITED in any case, or
  blank (no label: the row changes nothing);
- ``justification`` (optional, "" when absent);
- ``claim``, ``claim_revision``, ``run`` (optional, checked against the
  database by ``labeling.tables.label_import`` when present);
- ``reviewer`` (optional: whose label the row showed when exported);
- ``labeled_at`` (optional: when the label the row showed was made, ISO 8601
  as exported, ``2025-01-31T09:15:00Z``; blank when it showed none). With
  it, an import can tell which labels were made after the file was exported;
- ``adjudicated_by`` and ``adjudication_reason`` (optional: the row shows a
  lead's adjudication, SPEC §4.4, not a reviewer's label; the reason follows
  a justification's rules). ``adjudicated_at`` is for the reader.

Everything else (``citations``, ``passage``, ``status`` …) is for the reader.

XLSX and CSV are read by ``labeling.importers.tabular``, as answers tables
are. XLSX: sheet ``Labels`` (else the first sheet), header in row 1, read with
openpyxl in read-only mode; a cell holding a formula is read as its text,
never evaluated. CSV: UTF-8 (a byte-order mark is fine), separator ``,``,
``;`` or tab (sniffed from the header), and one leading apostrophe is removed
from every cell that starts with one (the apostrophe rule of
``labeling.exports.csv_jsonl``). JSONL: one object per line with the same keys.

Row numbers in issues are what a spreadsheet shows (header = row 1, first
data row = 2) for XLSX and CSV, and the line number for JSONL. Each bad cell
becomes an ImportIssue (row, column, reason); a bad row is left out of
``rows`` and blocks the import. Whole numbers must fit a 64-bit signed
integer (0 … 2**63 − 1, what the database stores); text must not hold a NUL
character or a lone surrogate (``labeling.names.text_problem``; in a
justification no other control character either), and a justification has
the review page's limit (``labeling.limits``). ``run`` and ``question_id``
are read in the normal form of ``labeling.names``. A file without data rows,
a damaged file (truncated worksheet XML, a CSV cell over 1,000,000
characters, JSON nested too deeply) is one ``(file)`` issue, never an
exception.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import IO, Any

from labeling.importers.cells import MAX_WHOLE_NUMBER, CellError, whole_number
from labeling.importers.content import HEAD_BYTES, content_problem, max_rows, not_utf8, too_many_rows
from labeling.importers.records import ImportIssue
from labeling.importers.tabular import FileProblem, csv_rows, xlsx_rows
from labeling.limits import MAX_JUSTIFICATION_CHARS
from labeling.names import normalize_name, text_problem
from scoring.judgments import JUDGMENTS, check_judgment
from scoring.labels import LABEL_VALUES

FORMATS = ("xlsx", "csv", "jsonl")
FILE_FIELDS = ("(file)", "(header)")  # issue fields that mean nothing in the file could be read
MAX_INTEGER = MAX_WHOLE_NUMBER
_SHOWN_COLUMNS = 12
WRITTEN_COLUMNS = ("justification", "adjudication_reason")


@dataclass(frozen=True, slots=True)
class LabelTableRow:
    """One parsed row. ``claim`` and ``claim_revision`` are ``None`` when the
    file has no such column (nothing to check); ``label`` is upper-cased, or
    ``None`` when blank."""

    line: int
    claim_id: int | None
    run: str | None
    question_id: str | None
    claim_index: int | None
    claim: str | None
    claim_revision: int | None
    label: str | None
    justification: str
    reviewer: str
    labeled_at: datetime | None = None
    # SPEC §4.3b: ``None`` when the file has no such column or the cell is blank.
    factual: bool | None = None
    # cited id → judgment, and cited id → evidence, from the ``judgments``/``evidence`` cells.
    judgments: dict[str, str] | None = None
    evidence: dict[str, str] | None = None
    # The lead whose adjudication the row shows, and its reason ("" when none).
    adjudicated_by: str = ""
    adjudication_reason: str = ""


@dataclass
class LabelTableFile:
    """A parsed label table file: its ``format``, valid ``rows`` and the
    ``issues`` of the bad ones (row, column, reason)."""

    format: str
    rows: list[LabelTableRow] = field(default_factory=list)
    issues: list[ImportIssue] = field(default_factory=list)
    columns: list[str] = field(default_factory=list)

    @property
    def has_labeled_at(self) -> bool:
        """The file has a ``labeled_at`` column: rows say when the label they showed was made."""
        return "labeled_at" in self.columns

    @property
    def rows_read(self) -> int:
        """Rows of the file below its header: the valid ones and those refused
        while reading (a row with several problems counts once)."""
        refused = {issue.line for issue in self.issues if issue.field not in FILE_FIELDS}
        return len(self.rows) + len(refused - {row.line for row in self.rows})

    @property
    def file_problem(self) -> str:
        """Why the file as a whole cannot be imported (empty, damaged, no
        usable header), or "" when its rows could be read."""
        return next((issue.reason for issue in self.issues if issue.field in FILE_FIELDS), "")


def label_table_format(filename: str) -> str:
    """``"xlsx"``, ``"csv"`` or ``"jsonl"`` from a file name; ValueError otherwise."""
    suffix = filename.rsplit(".", 1)[-1].lower() if "." in filename else ""
    aliases = {"xlsx": "xlsx", "xlsm": "xlsx", "csv": "csv", "jsonl": "jsonl", "ndjson": "jsonl"}
    if suffix not in aliases:
        raise ValueError(f"cannot tell the format of {filename!r}: use a .xlsx, .csv or .jsonl file")
    return aliases[suffix]


def header_key(name: Any) -> str:
    """Column key of a header cell: ``" Claim ID "`` → ``"claim_id"``."""
    return re.sub(r"[\s\-]+", "_", str(name or "").strip().lower())


def read_label_table(source: bytes | IO[bytes], *, format: str) -> LabelTableFile:
    """Parse a label table file (module docstring) of ``format`` (see FORMATS).

    ``source`` is the file's bytes or a binary file. Never raises on bad
    content: problems are returned in ``LabelTableFile.issues``.
    """
    if format not in FORMATS:
        raise ValueError(f"unknown label table format {format!r} (expected one of {', '.join(FORMATS)})")
    data = source if isinstance(source, bytes) else source.read()
    result = LabelTableFile(format=format)
    header_seen = data_rows = 0
    try:
        if format == "xlsx":
            records = _xlsx_records(data)
        elif format == "csv":
            records = _csv_records(data)
        else:
            records = _jsonl_records(data)
        for line, record in records:
            if line == 0:
                header_seen = 1
                result.columns = list(record)
                missing = _missing_columns(record, format)
                if missing:
                    result.issues.append(ImportIssue(1, "(header)", missing))
                    return result
                continue
            data_rows += 1
            _add_row(result, line, record)
    except FileProblem as problem:
        result.issues.append(problem.issue)
        return result
    if not data_rows and not result.issues:
        reason = "the file has no rows below the header" if header_seen else "the file has no rows: it is empty"
        result.issues.append(ImportIssue(1, "(file)", reason))
    return result


def _missing_columns(header: dict[str, Any], fmt: str) -> str:
    """Why ``header`` (column key → the name as written) cannot be read, or "".

    The message names what row 1 (line 1) holds, so a title row above the
    header, or a file of another kind, is recognisable at once.
    """
    columns = set(header)
    no_label = "label" not in columns
    if not no_label and ("claim_id" in columns or {"question_id", "claim_index"} <= columns):
        return ""
    names = [str(name).strip() for name in header.values() if name is not None and str(name).strip()]
    found = ", ".join(repr(name if len(name) <= 60 else name[:60] + "…") for name in names[:_SHOWN_COLUMNS])
    if len(names) > _SHOWN_COLUMNS:
        found += f" … ({len(names)} in all)"
    if fmt == "jsonl":
        lead = ("no 'label' key in the object on line 1 (each line is one row of the label table)" if no_label
                else "needs a 'claim_id' key, or 'question_id' and 'claim_index', in the object on line 1")
        return f"{lead}; its keys are {found or 'none'}"
    lead = ("no 'label' column in row 1: the header must be the first row of the file" if no_label
            else "needs a 'claim_id' column, or 'question_id' and 'claim_index', in row 1 (the header must be "
                 "the first row of the file)")
    return f"{lead}; row 1 holds {found or 'nothing'}"


def _xlsx_records(data: bytes) -> Iterator[tuple[int, dict[str, Any]]]:
    return _table_records(xlsx_rows(data, sheet="Labels"), undo_apostrophe=False)


def _csv_records(data: bytes) -> Iterator[tuple[int, dict[str, Any]]]:
    return _table_records(csv_rows(data), undo_apostrophe=True)


def _table_records(rows: Iterator[tuple[int, list[Any]]], *, undo_apostrophe: bool,
                   ) -> Iterator[tuple[int, dict[str, Any]]]:
    """Header (as ``(0, {key: name as written})``) then ``(row, {key: cell})``."""
    header: list[str] | None = None
    for number, values in rows:
        if header is None:
            header = [header_key(v) for v in values]
            yield 0, dict(zip(header, values, strict=True))
            continue
        if undo_apostrophe:
            # The apostrophe rule of labeling.exports.csv_jsonl, undone.
            values = [v[1:] if v.startswith("'") else v for v in values]
        yield number, dict(zip(header, values, strict=False))


def _json_line(line: str) -> tuple[Any, str]:
    """``(value, "")`` for a valid JSON line, else ``(None, reason)``."""
    try:
        return json.loads(line), ""
    except json.JSONDecodeError as exc:
        return None, f"invalid JSON: {exc.msg} at column {exc.colno}"
    except RecursionError:
        return None, "invalid JSON: nested too deeply"
    except ValueError:  # an integer literal past sys.get_int_max_str_digits()
        return None, "invalid JSON: a number has too many digits"


def _jsonl_records(data: bytes) -> Iterator[tuple[int, dict[str, Any]]]:
    if problem := content_problem(data[:HEAD_BYTES], format="jsonl"):
        raise FileProblem(problem)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise FileProblem(not_utf8(data, exc)) from None
    header_given = False
    limit, rows = max_rows(), 0
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        rows += 1
        if rows > limit:
            raise FileProblem(too_many_rows(number))
        raw, error = _json_line(line)
        if error:
            if not header_given:
                raise FileProblem(ImportIssue(number, "(line)", error))
            yield number, {"__error__": error}
            continue
        if not isinstance(raw, dict):
            yield number, {"__error__": "expected a JSON object"}
            continue
        record = {header_key(k): v for k, v in raw.items()}
        if not header_given:
            header_given = True
            yield 0, {header_key(k): k for k in raw}
        yield number, record


def _add_row(result: LabelTableFile, line: int, record: dict[str, Any]) -> None:
    issues: list[ImportIssue] = []

    def problem(column: str, reason: str) -> None:
        issues.append(ImportIssue(line, column, reason))

    if "__error__" in record:
        problem("(line)", record["__error__"])
        result.issues.extend(issues)
        return
    claim_id = _integer(record.get("claim_id"), "claim_id", problem)
    question_id = _text(record.get("question_id"), "question_id", problem)
    claim_index = _integer(record.get("claim_index"), "claim_index", problem)
    if claim_id is None and (not question_id or claim_index is None) and not issues:
        problem("claim_id", "blank: the row must name its claim (claim_id, or question_id and claim_index)")
    label = _text(record.get("label"), "label", problem)
    label = label.strip().upper() if label else ""
    if label and label not in LABEL_VALUES:
        problem("label", f"unknown label {record.get('label')!r}: use {', '.join(LABEL_VALUES)}, "
                         "or leave it blank")
    justification = _text(record.get("justification"), "justification", problem) or ""
    reason = _text(record.get("adjudication_reason"), "adjudication_reason", problem) or ""
    for column, text in (("justification", justification), ("adjudication_reason", reason)):
        if len(text.strip()) > MAX_JUSTIFICATION_CHARS:
            problem(column, f"{len(text.strip()):,} characters long; the limit is "
                            f"{MAX_JUSTIFICATION_CHARS:,} (as in the review page)")
    factual = _boolean(record.get("factual"), "factual", problem)
    judgments = _bracketed(record.get("judgments"), "judgments", problem)
    evidence = _bracketed(record.get("evidence"), "evidence", problem)
    if judgments:
        for cited_id, value in list(judgments.items()):
            try:
                judgments[cited_id] = check_judgment(value)
            except ValueError:
                problem("judgments", f"[{cited_id}]: unknown judgment {value!r}; use {', '.join(JUDGMENTS)}")
    for cited_id, words in (evidence or {}).items():
        if cited_id not in (judgments or {}):
            problem("evidence", f"[{cited_id}] has evidence but no judgment in the judgments column")
        elif len(words) > MAX_JUSTIFICATION_CHARS:
            problem("evidence", f"[{cited_id}]: {len(words):,} characters long; the limit is "
                                f"{MAX_JUSTIFICATION_CHARS:,}")
    row = LabelTableRow(
        line=line,
        claim_id=claim_id,
        # Ids in the normal form the answers importer stores them in (labeling.names).
        run=normalize_name(_text(record.get("run"), "run", problem) or "") if "run" in record else None,
        question_id=normalize_name(question_id) if question_id else None,
        claim_index=claim_index,
        claim=(_text(record.get("claim"), "claim", problem) or "") if "claim" in record else None,
        claim_revision=_integer(record.get("claim_revision"), "claim_revision", problem),
        label=label or None,
        justification=justification,
        reviewer=(_text(record.get("reviewer"), "reviewer", problem) or "").strip(),
        labeled_at=_time(record.get("labeled_at"), "labeled_at", problem),
        factual=factual,
        judgments=judgments,
        evidence=evidence,
        adjudicated_by=(_text(record.get("adjudicated_by"), "adjudicated_by", problem) or "").strip(),
        adjudication_reason=reason.strip(),
    )
    if issues:
        result.issues.extend(issues)
    else:
        result.rows.append(row)


_TRUE, _FALSE = {"true", "yes", "1"}, {"false", "no", "0"}
_BRACKETED = re.compile(r"^\[([^\]]+)\]\s*(.*)$")


def _boolean(value: Any, column: str, problem) -> bool | None:
    """A ``factual`` cell: a boolean, or true/false, yes/no, 1/0 in any case; blank: ``None``."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE or text in _FALSE:
        return text in _TRUE
    problem(column, f"{value!r} is not true or false")
    return None


def _bracketed(value: Any, column: str, problem) -> dict[str, str] | None:
    """A ``judgments`` or ``evidence`` cell: lines ``[id] text`` → ``{id: text}``; blank: ``None``."""
    text = _text(value, column, problem)
    if not text or not text.strip():
        return None
    found: dict[str, str] = {}
    for number, line in enumerate(text.replace("\r\n", "\n").split("\n"), start=1):
        if not line.strip():
            continue
        match = _BRACKETED.match(line.strip())
        if match is None:
            problem(column, f"line {number} of the cell, {line.strip()[:60]!r}: write one “[id] …” per citation")
            continue
        cited_id = match.group(1).strip()
        if cited_id in found:
            problem(column, f"[{cited_id}] is given twice")
            continue
        found[cited_id] = match.group(2).strip()
    return found


def _text(value: Any, column: str, problem) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        problem(column, "expected text, got a true/false value")
        return None
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, str):
        # A justification (or a lead's reason) is written by people; the other
        # columns only identify or show a claim (labeling.names.text_problem).
        reason = text_problem(value, document=column not in WRITTEN_COLUMNS)
        if reason:
            problem(column, reason)
            return None
        return value
    problem(column, f"expected text, got {type(value).__name__}")
    return None


def _time(value: Any, column: str, problem) -> datetime | None:
    """An aware UTC datetime from an ISO 8601 cell (``2025-01-31T09:15:00Z``);
    a time without an offset is read as UTC (exports write UTC)."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, datetime):  # a spreadsheet program turned the text into a date cell
        moment = value
    elif isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            shown = value if len(value) <= 40 else value[:40] + "…"
            problem(column, f"expected a time like 2025-01-31T09:15:00Z, got {shown!r}")
            return None
    else:
        problem(column, f"expected a time like 2025-01-31T09:15:00Z, got {value!r}")
        return None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _integer(value: Any, column: str, problem) -> int | None:
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    try:
        return whole_number(value, maximum=MAX_INTEGER)
    except CellError as error:
        problem(column, str(error))
        return None
