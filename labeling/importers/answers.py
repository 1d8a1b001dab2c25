"""The one entry point for reading an answers file (SPEC §6), whatever its
format: JSON Lines (``answers_jsonl``) or a CSV/XLSX table with one row per
claim (``answers_table``). No ORM; the writing service is
``labeling.importers.load.run_import``.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO

from labeling.importers.answers_jsonl import iter_answer_records
from labeling.importers.answers_table import iter_table_records
from labeling.importers.content import HEAD_BYTES, content_problem
from labeling.importers.records import AnswerRecord, ImportIssue

FORMATS = ("jsonl", "csv", "xlsx")
_SUFFIXES = {"jsonl": "jsonl", "ndjson": "jsonl", "json": "jsonl", "csv": "csv", "xlsx": "xlsx", "xlsm": "xlsx"}

AnswersSource = str | Path | bytes | IO[bytes]
RecordResults = Iterable[tuple[int, AnswerRecord | None, list[ImportIssue]]]


def answers_format(filename: str) -> str:
    """``"jsonl"``, ``"csv"`` or ``"xlsx"`` from a file name; ValueError otherwise."""
    suffix = filename.rsplit(".", 1)[-1].lower() if "." in filename else ""
    if suffix not in _SUFFIXES:
        raise ValueError(f"cannot tell the format of {filename!r}: use .jsonl, .csv or .xlsx")
    return _SUFFIXES[suffix]


def answer_records(
    source: AnswersSource, *, format: str | None = None, run: str | None = None,
) -> Callable[[], RecordResults]:
    """A function that parses ``source`` afresh each time it is called,
    yielding ``(line, record or None, issues)`` per answer (see
    ``answers_jsonl.iter_answer_records``); ``labeling.importers.load.run_import``
    calls it once and reads the records as a stream.

    ``source`` is a path (format from its suffix unless ``format`` is given),
    bytes or a seekable binary file (``format`` defaults to ``"jsonl"``).
    ``run`` overrides the file's run names. Raises ValueError for an unknown
    format. A JSON Lines file that is not text (``labeling.importers.content``)
    yields one ``(file)`` issue; CSV/XLSX are checked as they are read.
    """
    if format is None:
        format = answers_format(str(source)) if isinstance(source, (str, Path)) else "jsonl"
    if format not in FORMATS:
        raise ValueError(f"unknown answers file format {format!r} (expected one of {', '.join(FORMATS)})")
    if format == "jsonl":
        open_lines = _line_opener(source)
        if problem := content_problem(_head(source), format="jsonl"):
            return lambda: iter([(problem.line, None, [problem])])
        return lambda: iter_answer_records(open_lines(), run=run)
    data = _read_bytes(source)
    return lambda: iter_table_records(data, format=format, run=run)


def _head(source: AnswersSource) -> bytes:
    """The first HEAD_BYTES of ``source``, leaving a file where it was."""
    if isinstance(source, bytes):
        return source[:HEAD_BYTES]
    if isinstance(source, (str, Path)):
        with Path(source).open("rb") as handle:
            return handle.read(HEAD_BYTES)
    position = source.tell()
    head = source.read(HEAD_BYTES)
    source.seek(position)
    return head


def _read_bytes(source: AnswersSource) -> bytes:
    if isinstance(source, bytes):
        return source
    if isinstance(source, (str, Path)):
        return Path(source).read_bytes()
    return source.read()


def _line_opener(source: AnswersSource) -> Callable[[], Iterable[bytes]]:
    if isinstance(source, (str, Path)):
        path = Path(source)

        def open_path() -> Iterator[bytes]:
            with path.open("rb") as handle:
                yield from handle

        return open_path
    if isinstance(source, bytes):
        source = io.BytesIO(source)

    def rewind() -> Iterable[bytes]:
        source.seek(0)
        return source

    return rewind
