"""What every public-dataset reader shares (SPEC §6): the files handed in,
the answers drafted from them, and JSON read with its line numbers, no ORM.

A reader (one module per format in this package) turns a dataset's own files
into **drafts**: answers-file objects (SPEC §6, the JSON Lines shape) with
the file and line they came from and the system (run) that answered. Every
problem is an ``ImportIssue`` naming the file, the line and the field in the
dataset's own terms (``answers.rr_gs_gpt4.claims[2].support``), so a person
can find it in the file they have. ``labeling.importers.datasets.load`` validates the
drafts as answers-file lines and writes them, all or nothing.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from labeling.importers.content import HEAD_BYTES, content_problem, max_rows, not_utf8, too_many_rows
from labeling.importers.records import ImportIssue


@dataclass(frozen=True)
class DatasetSource:
    """A public dataset as its importer knows it: ``name`` (as its paper
    names it), ``url`` (its repository), ``commit`` (the repository commit
    the importer was written against: the default provenance commit),
    ``licence`` (SPDX id), ``files`` (what to pass, as named in the
    repository) and ``note`` (how its labels become Citelab's and what is
    lost; stored on the run's provenance)."""

    name: str
    url: str
    commit: str
    licence: str
    files: str
    note: str


@dataclass(frozen=True)
class SourceFile:
    """One file handed to a reader: its ``name`` (for messages) and bytes."""

    name: str
    data: bytes


@dataclass
class Draft:
    """One answer drafted from a dataset: ``answer`` is an answers-file
    object without ``run`` (None when the record had problems), ``system``
    the run it belongs to (the dataset's system or model name; None: the
    format's default), ``file``/``line`` where it starts."""

    file: str
    line: int
    system: str | None
    answer: dict[str, Any] | None
    issues: list[ImportIssue] = field(default_factory=list)


class Problems:
    """Collects the issues of one record: ``add(field, reason)`` names the
    file and line given at construction."""

    def __init__(self, file: str, line: int):
        self.file, self.line = file, line
        self.issues: list[ImportIssue] = []

    def add(self, field: str, reason: str) -> None:
        self.issues.append(ImportIssue(self.line, field, reason, file=self.file))

    def __bool__(self) -> bool:
        return bool(self.issues)


def file_issue(source: SourceFile, reason: str, *, line: int = 1, field: str = "(file)") -> ImportIssue:
    return ImportIssue(line, field, reason, file=source.name)


def text_of(source: SourceFile, *, format: str = "jsonl") -> tuple[str | None, ImportIssue | None]:
    """The file's UTF-8 text (byte-order mark dropped), or the ``(file)``
    issue saying why it is not ``format`` text (``labeling.importers.content``)."""
    if problem := content_problem(source.data[:HEAD_BYTES], format=format):
        return None, file_issue(source, problem.reason, line=problem.line)
    try:
        return source.data.decode("utf-8-sig"), None
    except UnicodeDecodeError as exc:
        issue = not_utf8(source.data, exc)
        return None, file_issue(source, issue.reason, line=issue.line)


def json_lines(source: SourceFile) -> Iterator[tuple[int, Any, ImportIssue | None]]:
    """``(line, decoded object, None)`` per non-blank line of a JSON Lines
    file, or ``(line, None, issue)`` for a line that is not JSON; one
    ``(file)`` issue for a file that is not UTF-8 text or has more lines than
    ``CITELAB_MAX_IMPORT_ROWS`` (then the stream ends)."""
    text, issue = text_of(source)
    if issue is not None:
        yield issue.line, None, issue
        return
    limit, count = max_rows(), 0
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        count += 1
        if count > limit:
            yield number, None, _file(source, too_many_rows(number))
            return
        value, reason = _decode(line)
        yield number, value, (file_issue(source, reason, line=number, field="(line)") if reason else None)


def json_document(source: SourceFile) -> tuple[str | None, Any, ImportIssue | None]:
    """``(text, value, None)`` for a file holding one JSON document, else
    ``(None, None, issue)`` naming the line and column where it breaks."""
    text, issue = text_of(source, format="json")
    if issue is not None:
        return None, None, issue
    try:
        return text, json.loads(text), None
    except json.JSONDecodeError as exc:
        return None, None, file_issue(source, f"invalid JSON: {exc.msg} at column {exc.colno}", line=exc.lineno)
    except RecursionError:
        return None, None, file_issue(source, "invalid JSON: nested too deeply")


def line_at(text: str, offset: int) -> int:
    """1-based line of character ``offset`` of ``text``."""
    return text.count("\n", 0, offset) + 1


def item_lines(text: str) -> list[int]:
    """The line where each element of the top-level JSON array ``text``
    starts (``text`` is known to be valid JSON), so a record of a JSON file
    is named by its line as in a JSON Lines file."""
    decoder = json.JSONDecoder()
    index = _skip(text, 0)
    if index >= len(text) or text[index] != "[":
        return []
    lines: list[int] = []
    index = _skip(text, index + 1)
    while index < len(text) and text[index] != "]":
        lines.append(line_at(text, index))
        _value, index = decoder.raw_decode(text, index)
        index = _skip(text, index)
        if index < len(text) and text[index] == ",":
            index = _skip(text, index + 1)
    return lines


def key_line(text: str, key: str, start: int = 0) -> tuple[int, int]:
    """``(line, offset)`` of the first ``"key":`` at or after ``start`` in the
    JSON ``text``, or ``(line of start, start)`` when absent: a member of a
    JSON object is named by the line of its key."""
    found = text.find(json.dumps(key, ensure_ascii=False) + ":", start)
    if found < 0:
        found = text.find(json.dumps(key) + ":", start)
    found = found if found >= 0 else start
    return line_at(text, found), found


def stable_id(prefix: str, text: str) -> str:
    """``prefix:`` + the first 12 hex digits of the SHA-1 of ``text``: a
    question id that every import of the same question text meets (the
    ExpertQA fixtures' ``expertqa:03cecfa2a0a3``)."""
    return f"{prefix}:{hashlib.sha1(text.encode('utf-8')).hexdigest()[:12]}"


def text_field(value: Any, field: str, problems: Problems, *, required: bool = True) -> str:
    """``value`` when it is a string (non-blank when ``required``), else ""
    with the problem named; numbers are read as their text."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    if value is None:
        if required:
            problems.add(field, "missing")
        return ""
    if not isinstance(value, str):
        problems.add(field, f"must be text, got {type(value).__name__}")
        return ""
    if required and not value.strip():
        problems.add(field, "blank")
    return value


def list_field(value: Any, field: str, problems: Problems, *, required: bool = True) -> list:
    if value is None and not required:
        return []
    if not isinstance(value, list):
        problems.add(field, "missing" if value is None else f"must be a list, got {type(value).__name__}")
        return []
    return value


def dict_field(value: Any, field: str, problems: Problems) -> dict:
    if not isinstance(value, dict):
        problems.add(field, "missing" if value is None else f"must be an object, got {type(value).__name__}")
        return {}
    return value


def choice(value: Any, field: str, problems: Problems, mapping: dict[Any, Any]) -> Any:
    """``mapping[value]``, or None with the known values named."""
    try:
        return mapping[value]
    except (KeyError, TypeError):
        known = ", ".join(repr(key) for key in mapping)
        problems.add(field, f"unknown value {value!r} (expected one of {known})")
        return None


def drafts_from_lines(source: SourceFile, draft: Callable[[int, Any, Problems], list[Draft]]) -> Iterator[Draft]:
    """Drafts of a JSON Lines file: ``draft(line, object, problems)`` per line;
    a line that is not a JSON object is one issue."""
    for number, value, issue in json_lines(source):
        problems = Problems(source.name, number)
        if issue is not None:
            yield Draft(source.name, number, None, None, [issue])
            continue
        if not isinstance(value, dict):
            problems.add("(line)", "expected a JSON object")
            yield Draft(source.name, number, None, None, problems.issues)
            continue
        yield from draft(number, value, problems)


def _decode(line: str) -> tuple[Any, str]:
    try:
        return json.loads(line), ""
    except json.JSONDecodeError as exc:
        return None, f"invalid JSON: {exc.msg} at column {exc.colno}"
    except RecursionError:
        return None, "invalid JSON: nested too deeply"
    except ValueError:
        return None, "invalid JSON: a number has too many digits"


def _skip(text: str, index: int) -> int:
    while index < len(text) and text[index] in " \t\r\n":
        index += 1
    return index


def _file(source: SourceFile, issue: ImportIssue) -> ImportIssue:
    return ImportIssue(issue.line, issue.field, issue.reason, file=source.name)
