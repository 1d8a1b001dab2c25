"""Answers file as a spreadsheet (CSV or XLSX; SPEC §6): one row per claim →
the same AnswerRecord as the JSON Lines format, no ORM.

Rows are grouped into answers by (``run``, ``question_id``) in order of first
appearance (rows of one answer need not be adjacent); each group becomes the
JSON object of one answers-file line and goes through
``answers_jsonl.answer_record_from_dict``, so both formats share every rule.
Header names are matched case-insensitively (spaces as ``_``); the header is
row 1 and issues name the spreadsheet row.

=============  ======================================================  =========
column         meaning                                                 per
=============  ======================================================  =========
question_id    stable question id (required)                           answer
question       question text (required on at least one row)            answer
run            run name (or given on import, which overrides it)       answer
answer         full answer text (required on at least one row)         answer
answerable     true/false/yes/no/1/0, blank = unknown                  answer
passages       JSON list ``[{"id", "source", "text"}]``                answer
gold           JSON object ``{"supporting_ids", "references",          answer
               "expected_sources"}`` (optional)
claim_index    1-based position of the claim (default: row order)      claim
claim          claim text; leave blank on every row of an answer to    claim
               split the answer into sentence claims at its markers
citations      cited passage ids, comma-separated (``1, 3``)           claim
span           quoted span: plain text when the claim cites one        claim
               passage, else one line ``[id] span`` per citation
label          SUPPORTED / UNSUPPORTED / UNCITED, blank = none         claim
justification  the label's justification                               claim
reviewer       who gave the label (default: the import's reviewer)     claim
factual        false/no/0 for a claim that is not a factual claim      claim
               (SPEC §4.3b), blank = factual
judgments      the reviewer's judgment of each citation: the value     claim
               when the claim cites one passage, else one line
               ``[id] FULL|PARTIAL|NONE|UNJUDGEABLE`` per citation
evidence       the passage words behind a judgment, in the same form   claim
labeled_at     when the label was given (ISO 8601; default: now)       claim
=============  ======================================================  =========

Several reviewers per claim: rows of one answer that give the same
``claim_index`` are one claim, one row per reviewer (its ``label``,
``justification``, ``reviewer``, ``labeled_at``, ``judgments``,
``evidence``); the claim's own cells (``claim``, ``citations``, ``span``,
``factual``) are repeated or blank on the later rows. They become the
claim's ``labels`` list (and each citation's ``judgments``) of the JSON
Lines format.

An answer-level value may be repeated on every row of the answer or given on
one row only; two different non-blank values are an error. A row that
repeats another row of the same answer cell for cell is an error (it would
be a second, identical claim), and so is a file with no row below the
header. Rows are read by ``labeling.importers.tabular``. A CSV cell that
starts with an apostrophe followed by ``=``, ``+``, ``-``, ``@`` or another
apostrophe loses that first apostrophe (the guard spreadsheets add against
formulas, as in ``labeling.exports.csv_jsonl``); other text is kept as is.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from labeling.importers.answers_jsonl import _LineProblems, answer_record_from_dict
from labeling.importers.cells import MAX_SMALL_NUMBER, CellError, whole_number
from labeling.importers.label_table import header_key
from labeling.importers.records import AnswerRecord, ImportIssue
from labeling.importers.tabular import FileProblem, csv_rows, xlsx_rows
from labeling.names import normalize_name

FORMATS = ("csv", "xlsx")
ANSWER_FIELDS = ("question", "answer", "answerable", "passages", "gold")
_SPAN_LINE = re.compile(r"^\[([^\]]+)\]\s?(.*)$")
_GUARDED = {"'=", "'+", "'-", "'@", "''", "'\t"}
_TRUE = {"true", "yes", "1", "y"}
_FALSE = {"false", "no", "0", "n"}

RecordResult = tuple[int, AnswerRecord | None, list[ImportIssue]]
# A claim's first row, and the row of each reviewer's entry ("labels[1]" → 7).
ClaimRows = tuple[int, dict[str, int]]


def iter_table_records(data: bytes, *, format: str, run: str | None = None) -> Iterator[RecordResult]:
    """Parse a CSV/XLSX answers file (module docstring) into
    ``(row, record, issues)`` per answer, like
    ``answers_jsonl.iter_answer_records``: ``record`` is None when the answer
    has problems; ``row`` is the answer's first spreadsheet row; issues of a
    claim name that claim's row. ``run`` overrides the file's ``run`` column.
    """
    if format not in FORMATS:
        raise ValueError(f"unknown answers table format {format!r} (expected csv or xlsx)")
    try:
        rows = list(xlsx_rows(data) if format == "xlsx" else csv_rows(data))
    except FileProblem as problem:
        yield problem.issue.line, None, [problem.issue]
        return
    if len(rows) < 2:
        reason = "the file has no rows below the header" if rows else "the file is empty"
        yield 1, None, [ImportIssue(1, "(file)", reason)]
        return
    header = [header_key(v) for v in rows[0][1]]
    if "question_id" not in header:
        yield 1, None, [ImportIssue(1, "(header)", "no 'question_id' column: see the answers table columns")]
        return
    groups: dict[tuple[str, str], list[tuple[int, dict[str, Any]]]] = {}
    for number, values in rows[1:]:
        if format == "csv":
            values = [v[1:] if v[:2] in _GUARDED else v for v in values]
        record = dict(zip(header, values, strict=False))
        # Grouped as the answer will be stored: look-alike ids are one id (labeling.names).
        question_id = normalize_name(_cell(record.get("question_id")))
        run_name = run or normalize_name(_cell(record.get("run")))
        groups.setdefault((run_name, question_id), []).append((number, record))
    for (run_name, _question_id), group in groups.items():
        yield _answer(group, run_name=run_name, run_given=run)


def _answer(group: list[tuple[int, dict[str, Any]]], *, run_name: str, run_given: str | None) -> RecordResult:
    first = group[0][0]
    issues: list[ImportIssue] = []
    data: dict[str, Any] = {"question_id": _cell(group[0][1].get("question_id"))}
    if run_name:
        data["run"] = run_name
    for name in ANSWER_FIELDS:
        seen: tuple[int, str] | None = None
        for number, record in group:
            value = _cell(record.get(name))
            if not value:
                continue
            if seen is None:
                seen = (number, value)
            elif value != seen[1]:
                issues.append(ImportIssue(number, name, f"differs from row {seen[0]} of the same answer"))
        if seen is None:
            continue
        number, value = seen
        if name in ("passages", "gold"):
            try:
                data[name] = json.loads(value)
            except json.JSONDecodeError as exc:
                issues.append(ImportIssue(number, name, f"invalid JSON: {exc.msg} at column {exc.colno}"))
        elif name == "answerable":
            lowered = value.lower()
            if lowered in _TRUE or lowered in _FALSE:
                data[name] = lowered in _TRUE
            else:
                issues.append(ImportIssue(number, name, f"{value!r} is not true/false"))
        else:
            data[name] = value
    # A row repeated word for word would become a second, identical claim.
    seen_rows: dict[tuple[tuple[str, str], ...], int] = {}
    for number, record in group:
        key = tuple(sorted((name, _cell(value)) for name, value in record.items() if name not in ANSWER_FIELDS))
        if key in seen_rows:
            issues.append(ImportIssue(number, "claim", f"row {number} repeats row {seen_rows[key]} of the same "
                                                       "answer cell for cell: remove one of them"))
        seen_rows.setdefault(key, number)
    claim_rows = [number for number, record in group if _cell(record.get("claim"))]
    # Each claim's row, and the rows of its reviewers' entries (labels[k], citations[j].judgments[k]).
    rows_of: list[ClaimRows] = [(number, {}) for number, _record in group]
    if claim_rows:
        claims, rows_of = _claims(group, issues)
        data["claims"] = claims
    elif len(group) > 1:
        issues.append(ImportIssue(group[1][0], "claim", "blank on every row of this answer: give each claim "
                                                         "its text, or one row to split the answer into sentences"))
    try:
        record = answer_record_from_dict(data, line=first, run=run_given)
    except _LineProblems as problems:
        issues.extend(_claim_issue(issue, rows_of) for issue in problems.issues)
        return first, None, issues
    if issues:
        return first, None, issues
    return first, record, [_claim_issue(issue, rows_of) for issue in record.warnings]


# A claim's own cells: equal (or blank) on every row of one claim that several reviewers label.
_CLAIM_CELLS = ("claim", "citations", "span", "factual")


def _claims(group: list[tuple[int, dict[str, Any]]], issues: list[ImportIssue]
            ) -> tuple[list[dict[str, Any]], list[ClaimRows]]:
    """The answer's claims (answers-file objects) and the rows of each. Rows
    that give the same ``claim_index`` are one claim, one row per reviewer
    (each row its reviewer's label, justification, labeled_at, judgments and
    evidence; the claim's own cells repeated or left blank); a reviewer named
    on two rows of one claim is an error (answers_jsonl's ``labels`` rule)."""
    by_index: dict[str, list[tuple[int, dict[str, Any]]]] = {}
    order: list[list[tuple[int, dict[str, Any]]]] = []
    for number, record in group:
        index_text = _cell(record.get("claim_index"))
        if index_text and index_text in by_index:
            by_index[index_text].append((number, record))
            continue
        rows = [(number, record)]
        order.append(rows)
        if index_text:
            by_index[index_text] = rows
    claims: list[dict[str, Any]] = []
    rows_of: list[ClaimRows] = []
    for position, rows in enumerate(order):
        number, record = rows[0]
        claim = _claim(number, record, position, issues)
        entries: dict[str, int] = {}
        if len(rows) > 1:
            claim = _shared_claim(claim, rows, issues, entries)
        claims.append(claim)
        rows_of.append((number, entries))
    return claims, rows_of


def _shared_claim(claim: dict[str, Any], rows: list[tuple[int, dict[str, Any]]],
                  issues: list[ImportIssue], entries: dict[str, int]) -> dict[str, Any]:
    """One claim that several rows (one per reviewer) label: the first row's
    claim with ``labels`` (and each citation's ``judgments``) from every row.
    ``entries`` receives the row of each entry (``labels[1]`` → row 7)."""
    first_number, first = rows[0]
    for number, record in rows[1:]:
        for column in _CLAIM_CELLS:
            value, wanted = _cell(record.get(column)), _cell(first.get(column))
            if value and value != wanted:
                issues.append(ImportIssue(number, column, f"differs from row {first_number}, which gives the same "
                                                          "claim_index: rows of one claim (one per reviewer) share "
                                                          "its claim, citations, span and factual cells"))
    ids = [cited["passage_id"] for cited in claim["citations"]]
    labels: list[dict[str, Any]] = []
    given: dict[str, list[dict[str, str]]] = {}
    for number, record in rows:
        reviewer = _cell(record.get("reviewer")) or None
        label = _cell(record.get("label"))
        if label:
            entries[f"labels[{len(labels)}]"] = number
            labels.append({"label": label, "justification": _cell(record.get("justification"), strip=False),
                           "reviewer": reviewer, "labeled_at": _cell(record.get("labeled_at")) or None})
        judgments = _spans(_cell(record.get("judgments"), strip=False), ids, number, issues, column="judgments")
        evidence = _spans(_cell(record.get("evidence"), strip=False), ids, number, issues, column="evidence")
        for cited, value in judgments.items():
            if cited in ids:
                entries[f"citations[{ids.index(cited)}].judgments[{len(given.get(cited, []))}]"] = number
            given.setdefault(cited, []).append({"reviewer": reviewer, "judgment": value,
                                                "evidence": evidence.get(cited, "")})
    for key in ("label", "justification", "reviewer", "labeled_at"):
        claim.pop(key, None)
    claim["labels"] = labels
    for cited in claim["citations"]:
        cited.pop("judgment", None)
        cited.pop("evidence", None)
        if cited["passage_id"] in given:
            cited["judgments"] = given[cited["passage_id"]]
    return claim


def _claim(number: int, record: dict[str, Any], position: int, issues: list[ImportIssue]) -> dict[str, Any]:
    index_text = _cell(record.get("claim_index"))
    index: Any = position + 1
    if index_text:
        try:
            index = whole_number(index_text, maximum=MAX_SMALL_NUMBER)
        except CellError as error:
            issues.append(ImportIssue(number, "claim_index", str(error)))
    ids = [item.strip() for item in _cell(record.get("citations")).split(",") if item.strip()]
    spans = _spans(_cell(record.get("span"), strip=False), ids, number, issues)
    judgments = _spans(_cell(record.get("judgments"), strip=False), ids, number, issues, column="judgments")
    evidence = _spans(_cell(record.get("evidence"), strip=False), ids, number, issues, column="evidence")
    claim: dict[str, Any] = {
        "index": index,
        "text": _cell(record.get("claim"), strip=False),
        "citations": [{"passage_id": cited, "span": spans.get(cited, ""),
                       **({"judgment": judgments[cited]} if cited in judgments else {}),
                       **({"evidence": evidence[cited]} if cited in evidence else {})} for cited in ids],
    }
    factual = _cell(record.get("factual")).lower()
    if factual:
        # Anything else goes on as text: the answers check names the row and column.
        claim["factual"] = (factual in _TRUE) if factual in _TRUE or factual in _FALSE else factual
    label = _cell(record.get("label"))
    if label:
        claim["label"] = label
        claim["justification"] = _cell(record.get("justification"), strip=False)
        reviewer = _cell(record.get("reviewer"))
        if reviewer:
            claim["reviewer"] = reviewer
        labeled_at = _cell(record.get("labeled_at"))
        if labeled_at:
            claim["labeled_at"] = labeled_at
    return claim


def _spans(text: str, ids: list[str], number: int, issues: list[ImportIssue], *,
           column: str = "span") -> dict[str, str]:
    """A cell of one value per citation (``span``, ``judgments``, ``evidence``): plain text
    when the claim cites one passage, else one line ``[id] text`` per citation."""
    if not text.strip():
        return {}
    lines = [line for line in text.splitlines() if line.strip()]
    tagged = [_SPAN_LINE.match(line) for line in lines]
    if all(tagged):
        spans = {m.group(1).strip(): m.group(2).strip() for m in tagged if m}
        unknown = [key for key in spans if key not in ids]
        if unknown:
            issues.append(ImportIssue(number, column, f"{column} for {', '.join(unknown)}, which the claim does not "
                                                      "cite"))
        return spans
    if len(ids) == 1:
        return {ids[0]: text.strip()}
    issues.append(ImportIssue(number, column, f"the claim cites several passages: give one line '[id] {column}' "
                                              "each"))
    return {}


def _claim_issue(issue: ImportIssue, rows_of: list[ClaimRows]) -> ImportIssue:
    """``claims[2].label`` of the answer → the row of claim 2, column ``label``;
    ``claims[2].labels[1].reviewer`` → the row that gave that claim's second
    label, column ``reviewer``."""
    match = re.match(r"^claims\[(\d+)\]\.?([a-z_]*)", issue.field)
    if not match or int(match.group(1)) >= len(rows_of):
        return issue
    row, entries = rows_of[int(match.group(1))]
    column = match.group(2) or "claim"
    rest = issue.field[match.end(1) + 2:]
    entry = next((key for key in sorted(entries, key=len, reverse=True) if rest.startswith(key)), None)
    if entry is not None:
        row = entries[entry]
        if column == "labels":
            detail = re.search(r"\.([a-z_]+)$", issue.field)
            column = detail.group(1) if detail else "label"
    if column == "citations":
        # claims[2].citations[0].judgment → the judgments column (evidence → evidence).
        detail = re.search(r"\.(judgments?|evidence)(?:\[\d+\]\.(judgment|evidence|reviewer))?$", issue.field)
        if detail is not None:
            column = "evidence" if "evidence" in (detail.group(1), detail.group(2)) else "judgments"
    return ImportIssue(row, {"text": "claim", "index": "claim_index"}.get(column, column), issue.reason)


def _cell(value: Any, *, strip: bool = True) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    text = str(value)
    return text.strip() if strip else text
