"""Another judge's verdicts file → VerdictRecord list, no ORM (SPEC §4.4,
``manage.py import_verdicts``). Matching records to claims is
``labeling.judges.runs.verdicts_import``'s.

Every format names the claim by ``question_id`` plus ``claim_index`` (1-based,
as the label table numbers claims) or the claim's text (``claim``; matched
after Unicode NFKC, case folding and whitespace collapsing), and gives a
label, or a score that ``--threshold`` turns into one (score ≥ threshold →
SUPPORTED, else UNSUPPORTED; a score without a threshold is refused).

``rows`` — JSONL (one object a line) or CSV (header row), one claim a row::

    question_id, claim_index | claim, label | score, reason (optional)

  ``label``: SUPPORTED / UNSUPPORTED in any case.

``phoenix`` — Arize Phoenix-style evaluation annotations, one claim a row:
  ``{label, score, explanation}`` at the top level or under ``result``, the
  claim named by ``question_id`` and ``claim_index``/``claim`` at the top
  level or under ``metadata``. Labels map honestly, and only these:
  ``supported, factual, faithful, grounded`` → SUPPORTED;
  ``unsupported, hallucinated, unfaithful, ungrounded, not_supported`` →
  UNSUPPORTED. Any other label (e.g. ``relevant``: another question) is
  refused unless a score and ``--threshold`` decide.

``llm-log`` — a per-answer LLM-judge log, JSONL, one judge call a line:
  ``question_id`` and the verdicts, as a list or as the JSON text the model
  returned (under ``verdicts``, ``statements``, ``response`` or ``output``).
  Two shapes of verdict are read: Citelab's own (``{"verdicts": [{"id" |
  "claim_index" | "claim", "label", "reason"}]}``, ``id`` being the claim id
  ``autolabel`` sent) and RAGAS faithfulness' (``{"statements":
  [{"statement", "verdict": 1 | 0, "reason"}]}``, each statement matched to
  a claim by text: statements the judge wrote itself rarely equal a claim,
  and those are listed as unmatched, never forced onto one).

Bad input (no question id, no claim locator, an unknown label, a score that
is not a number or lacks a threshold, a line that is not JSON) becomes an
ImportIssue (line, field, reason) and blocks the import.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from labeling.importers.cells import MAX_SMALL_NUMBER, CellError, whole_number
from labeling.importers.records import ImportIssue
from labeling.importers.tabular import FileProblem, csv_rows
from labeling.limits import MAX_JUSTIFICATION_CHARS
from labeling.names import normalize_name, text_problem
from scoring.labels import SUPPORTED, UNSUPPORTED

FORMATS = ("auto", "rows", "phoenix", "llm-log")
PHOENIX_LABELS = {
    "supported": SUPPORTED, "factual": SUPPORTED, "faithful": SUPPORTED, "grounded": SUPPORTED,
    "unsupported": UNSUPPORTED, "hallucinated": UNSUPPORTED, "unfaithful": UNSUPPORTED,
    "ungrounded": UNSUPPORTED, "not_supported": UNSUPPORTED, "not supported": UNSUPPORTED,
}


@dataclass(frozen=True)
class VerdictRecord:
    """One verdict: ``line`` of the file, ``question_id``, the claim by
    ``claim_index`` (1-based) or ``claim_text`` or ``claim_id`` (the id
    ``autolabel`` sent), ``label`` (SUPPORTED/UNSUPPORTED), ``reason``."""

    line: int
    question_id: str
    label: str
    reason: str = ""
    claim_index: int | None = None
    claim_text: str | None = None
    claim_id: int | None = None

    @property
    def locator(self) -> str:
        """How the record names its claim, for messages."""
        if self.claim_id is not None:
            return f"claim id {self.claim_id}"
        if self.claim_index is not None:
            return f"claim {self.claim_index}"
        return f"claim {self.claim_text[:60]!r}"


@dataclass
class VerdictFile:
    records: list[VerdictRecord]
    issues: list[ImportIssue]
    format: str


def _objects(data: bytes, name: str) -> list[tuple[int, dict[str, Any]]] | ImportIssue:
    """``(line, object)`` of a JSONL (or JSON array) file, or CSV rows as objects keyed by the header."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        from labeling.importers.content import not_utf8

        return not_utf8(data, exc)
    if name.lower().endswith(".csv"):
        rows = []
        try:
            header: list[str] = []
            for number, cells in csv_rows(data):
                if number == 1:
                    header = [str(cell or "").strip().lower().replace(" ", "_") for cell in cells]
                    continue
                rows.append((number, {key: cell for key, cell in zip(header, cells, strict=False)
                                      if key and cell not in (None, "")}))
        except FileProblem as exc:
            return exc.issue
        return rows
    stripped = text.lstrip()
    if stripped.startswith("["):
        try:
            items = json.loads(text)
        except ValueError as exc:
            return ImportIssue(1, "(file)", f"not JSON: {exc}")
        return [(number, item) for number, item in enumerate(items, 1)]
    rows = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            rows.append((number, json.loads(line)))
        except (ValueError, RecursionError) as exc:
            rows.append((number, ImportIssue(number, "(line)", f"not a JSON object: {exc}")))
    return rows


def detect_format(item: dict[str, Any]) -> str:
    """The format a first record looks like (``auto``)."""
    if any(key in item for key in ("verdicts", "statements", "response", "output")):
        return "llm-log"
    if "result" in item or "explanation" in item or "metadata" in item:
        return "phoenix"
    return "rows"


class _Bad(ValueError):
    def __init__(self, field: str, reason: str):
        super().__init__(reason)
        self.field = field
        self.reason = reason


def _question_id(item: dict[str, Any], *sources: dict[str, Any]) -> str:
    for source in (item, *sources):
        value = source.get("question_id")
        if value not in (None, ""):
            return normalize_name(str(value))
    raise _Bad("question_id", "missing: name the answer's question_id")


def _index(value: Any, field: str) -> int:
    try:
        return whole_number(value, minimum=1, maximum=MAX_SMALL_NUMBER)
    except CellError as error:
        raise _Bad(field, f"{error}: a claim number (1, 2, …)") from None


def _text(value: Any, field: str, *, limit: int = 1_000_000) -> str:
    text = str(value)
    problem = text_problem(text)
    if problem:
        raise _Bad(field, problem)
    if len(text) > limit:
        raise _Bad(field, f"{len(text):,} characters; the limit is {limit:,}")
    return text.strip()


def _score_label(score: Any, threshold: float | None, field: str) -> str:
    if isinstance(score, bool):
        raise _Bad(field, f"{score!r} is not a number")
    try:
        value = float(score)
    except (TypeError, ValueError):
        raise _Bad(field, f"{score!r} is not a number") from None
    if math.isnan(value):
        raise _Bad(field, "NaN is not a score")
    if threshold is None:
        raise _Bad(field, f"a score ({value:g}) needs --threshold T to become a label (score ≥ T is SUPPORTED)")
    return SUPPORTED if value >= threshold else UNSUPPORTED


def _label(item: dict[str, Any], threshold: float | None, *, mapping: dict[str, str] | None = None) -> str:
    raw = item.get("label")
    if raw not in (None, ""):
        key = str(raw).strip()
        if mapping is not None and key.lower() in mapping:
            return mapping[key.lower()]
        if key.upper() in (SUPPORTED, UNSUPPORTED):
            return key.upper()
        if item.get("score") in (None, "") or threshold is None:
            known = ", ".join(sorted(mapping)) if mapping else "SUPPORTED, UNSUPPORTED"
            raise _Bad("label", f"{raw!r} is not a label this import maps to a verdict ({known})")
    if item.get("score") not in (None, ""):
        return _score_label(item["score"], threshold, "score")
    raise _Bad("label", "missing: give label (SUPPORTED/UNSUPPORTED) or score with --threshold")


def _locate(item: dict[str, Any], *sources: dict[str, Any]) -> dict[str, Any]:
    for source in (item, *sources):
        if source.get("claim_index") not in (None, ""):
            return {"claim_index": _index(source["claim_index"], "claim_index")}
        if source.get("claim") not in (None, ""):
            return {"claim_text": _text(source["claim"], "claim")}
    raise _Bad("claim_index", "missing: name the claim by claim_index (1, 2, …) or by its text (claim)")


def _reason(value: Any) -> str:
    if value in (None, ""):
        return ""
    return _text(value, "reason", limit=MAX_JUSTIFICATION_CHARS)


def _row_record(line: int, item: dict[str, Any], threshold: float | None) -> VerdictRecord:
    return VerdictRecord(line=line, question_id=_question_id(item), label=_label(item, threshold),
                         reason=_reason(item.get("reason")), **_locate(item))


def _phoenix_record(line: int, item: dict[str, Any], threshold: float | None) -> VerdictRecord:
    result = item.get("result") if isinstance(item.get("result"), dict) else {}
    metadata = item.get("metadata") if isinstance(item.get("metadata"), dict) else {}
    merged = {**item, **{k: v for k, v in result.items() if v not in (None, "")}}
    return VerdictRecord(line=line, question_id=_question_id(item, metadata),
                         label=_label(merged, threshold, mapping=PHOENIX_LABELS),
                         reason=_reason(merged.get("explanation") or merged.get("reason")),
                         **_locate(item, metadata))


def _log_verdicts(item: dict[str, Any]) -> tuple[str, list[Any]]:
    """(shape, verdict list) of one log line: ``verdicts`` (Citelab's) or ``statements`` (RAGAS)."""
    for key in ("verdicts", "statements"):
        if isinstance(item.get(key), list):
            return key, item[key]
    for key in ("response", "output", "verdicts", "statements"):
        value = item.get(key)
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError:
                raise _Bad(key, "the logged reply is not JSON: its verdicts cannot be read") from None
        if isinstance(value, dict):
            for shape in ("verdicts", "statements"):
                if isinstance(value.get(shape), list):
                    return shape, value[shape]
        if isinstance(value, list):
            return ("statements" if key == "statements" else "verdicts"), value
    raise _Bad("verdicts", 'no verdicts: give "verdicts" (or "statements", "response", "output")')


def _log_records(line: int, item: dict[str, Any], threshold: float | None) -> list[VerdictRecord]:
    question_id = _question_id(item)
    shape, verdicts = _log_verdicts(item)
    records = []
    for position, verdict in enumerate(verdicts, 1):
        field = f"{shape}[{position}]"
        if not isinstance(verdict, dict):
            raise _Bad(field, "not an object")
        try:
            if shape == "statements":
                text = verdict.get("statement")
                if text in (None, ""):
                    raise _Bad("statement", "missing")
                value = verdict.get("verdict")
                if value not in (0, 1, "0", "1") or isinstance(value, bool):
                    raise _Bad("verdict", f"{value!r}: RAGAS verdicts are 1 (supported) or 0 (not)")
                records.append(VerdictRecord(line=line, question_id=question_id,
                                             label=SUPPORTED if int(value) == 1 else UNSUPPORTED,
                                             reason=_reason(verdict.get("reason")),
                                             claim_text=_text(text, "statement")))
                continue
            if verdict.get("claim_index") in (None, "") and verdict.get("claim") in (None, ""):
                if verdict.get("id") in (None, ""):
                    raise _Bad("id", "missing: name the claim by id, claim_index or claim")
                locator = {"claim_id": _index(verdict["id"], "id")}
            else:
                locator = _locate(verdict)
            label_source = dict(verdict)
            if label_source.get("label") in (None, "") and verdict.get("verdict") not in (None, ""):
                label_source["label"] = verdict["verdict"]
            records.append(VerdictRecord(line=line, question_id=question_id, label=_label(label_source, threshold),
                                         reason=_reason(verdict.get("reason") or verdict.get("explanation")),
                                         **locator))
        except _Bad as exc:
            raise _Bad(f"{field}.{exc.field}", exc.reason) from None
    return records


def read_verdicts(data: bytes, *, name: str, format: str = "auto", threshold: float | None = None) -> VerdictFile:
    """Parse a verdicts file (module docstring). ``name`` gives the suffix
    (``.csv`` is read as CSV, anything else as JSONL or a JSON array).

    Returns every well-formed record and every issue; the caller imports
    nothing when ``issues`` is not empty. Raises ValueError for an unknown
    ``format``.
    """
    if format not in FORMATS:
        raise ValueError(f"unknown format {format!r}: use one of {', '.join(FORMATS)}")
    objects = _objects(data, name)
    if isinstance(objects, ImportIssue):
        return VerdictFile([], [objects], format)
    first = next((item for _, item in objects if isinstance(item, dict)), None)
    if first is None:
        return VerdictFile([], [ImportIssue(1, "(file)", "no verdicts in the file")], format)
    chosen = detect_format(first) if format == "auto" else format
    reader = {"rows": _row_record, "phoenix": _phoenix_record}.get(chosen)
    records: list[VerdictRecord] = []
    issues: list[ImportIssue] = []
    for line, item in objects:
        if isinstance(item, ImportIssue):
            issues.append(item)
            continue
        if not isinstance(item, dict):
            issues.append(ImportIssue(line, "(line)", "not a JSON object"))
            continue
        try:
            if reader is not None:
                records.append(reader(line, item, threshold))
            else:
                records.extend(_log_records(line, item, threshold))
        except _Bad as exc:
            issues.append(ImportIssue(line, exc.field, exc.reason))
    return VerdictFile(records, issues, chosen)
