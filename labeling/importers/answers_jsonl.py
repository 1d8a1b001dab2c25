"""Answers file in JSON Lines (SPEC §6): one answer per line → AnswerRecord.

Parsing is streaming (one line at a time) and never touches the database;
every problem becomes an ImportIssue with the line number, the field and the
reason. Cross-line rules (one answer per run and question) live in the
service that writes, which sees the whole stream.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Iterator
from typing import Any

from django.core.exceptions import ValidationError

from labeling.importers.answer_labels import (
    citation_judgments,
    claim_label,
    claim_labels,
    credit_judgments,
    item_str,
    optional_str,
)
from labeling.importers.cells import MAX_SMALL_NUMBER
from labeling.importers.content import max_rows, too_many_rows
from labeling.importers.markers import marker_problems, split_claims
from labeling.importers.records import (
    AnswerRecord,
    CitationRecord,
    ClaimRecord,
    GoldRecord,
    ImportIssue,
    LabelRecord,
    PassageRecord,
)
from labeling.limits import MAX_JUSTIFICATION_CHARS, MAX_TEXT_CHARS
from labeling.names import (
    clean,
    normalize_name,
    text_problem,
    validate_question_id,
    validate_run_name,
)
from scoring.judgments import JUDGMENTS, check_judgment
from scoring.labels import label_problem
from scoring.normalize import normalize_source


class _LineProblems(Exception):
    def __init__(self, issues: list[ImportIssue]):
        self.issues = issues


@functools.lru_cache(maxsize=4096)
def canonical_passage_id(value: str) -> str:
    """Form of a passage id used to resolve citations: brackets and spaces
    stripped, case folded, in the normal form of ``labeling.names`` (so a
    fullwidth ``Ｐ１`` is ``p1``), so ``[3]``, ``3`` and ``P1``/``p1`` meet (SPEC §2).
    Memoized: a file names the same few ids on every line."""
    return normalize_name(value).strip("[]【】").strip().casefold()


def iter_answer_records(
    lines: Iterable[bytes | str], *, run: str | None = None
) -> Iterator[tuple[int, AnswerRecord | None, list[ImportIssue]]]:
    """Parse an answers JSONL stream line by line.

    Yields ``(line_number, record, issues)`` for every non-blank line: a record
    when the line is valid (``issues`` then holds only warnings that do not
    block the import), else ``None`` and the issues. ``run`` overrides the
    file's ``run`` field (SPEC §6: "`run` (or given on import)"). The
    first non-blank line past CITELAB_MAX_IMPORT_ROWS yields one ``(file)``
    issue and ends the stream.
    """
    limit = max_rows()
    answers = 0
    for number, raw in enumerate(lines, start=1):
        try:
            text = raw.decode("utf-8", errors="strict") if isinstance(raw, bytes) else raw
        except UnicodeDecodeError as exc:
            yield number, None, [ImportIssue(number, "(line)", f"not UTF-8: {exc.reason} at byte {exc.start + 1}")]
            continue
        if number == 1:
            # Editors on Windows often start files with a byte order mark.
            text = text.removeprefix("\ufeff")
        if not text.strip():
            continue
        answers += 1
        if answers > limit:
            yield number, None, [too_many_rows(number)]
            return
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            yield number, None, [ImportIssue(number, "(line)", f"invalid JSON: {exc.msg} at column {exc.colno}")]
            continue
        except RecursionError:
            yield number, None, [ImportIssue(number, "(line)", "invalid JSON: nested too deeply")]
            continue
        try:
            record = answer_record_from_dict(data, line=number, run=run, text_checked=not _may_hold_refused(text))
        except _LineProblems as problems:
            yield number, None, problems.issues
            continue
        yield number, record, record.warnings


# A JSON line can put a character text_problem refuses into a string only as an
# escape (\u0000–\u001f, \ud800–\udfff, \b, \f) or, for a str line, as a raw
# surrogate (strict UTF-8 decoding never yields one). Raw control characters
# cannot: json.loads refuses them in strings and between tokens. A line without
# any of these needs no walk through its strings: for a 50k-claim file that walk
# was a sixth of the import. A match (an escaped backslash followed by "u0000"
# too) only means the full check runs.
_REFUSED_ESCAPE = re.compile(r"\\(?:u00[01][0-9a-fA-F]|u[dD][89a-fA-F][0-9a-fA-F]{2}|[bf])")
_REFUSED_RAW = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff]")


def _may_hold_refused(text: str) -> bool:
    """Whether a JSON line may decode to a string ``text_problem`` refuses (see
    above). Two cheap scans first: a regular expression scanning a whole line for
    a character class cost more than decoding the line."""
    return bool(("\\" in text and _REFUSED_ESCAPE.search(text))
                or (not text.isascii() and _REFUSED_RAW.search(text)))


def answer_record_from_dict(data: Any, *, line: int, run: str | None = None,
                            text_checked: bool = False) -> AnswerRecord:
    """Validate one decoded answer object (SPEC §6) into an AnswerRecord.

    ``text_checked``: the caller knows no string of ``data`` holds a character
    ``labeling.names.text_problem`` refuses (see ``_may_hold_refused``), so that
    walk is skipped. Raises ``_LineProblems`` carrying every issue of the line,
    not just the first.
    """
    issues: list[ImportIssue] = []

    def problem(field: str, reason: str) -> None:
        issues.append(ImportIssue(line, field, reason))

    if not isinstance(data, dict):
        raise _LineProblems([ImportIssue(line, "(line)", "expected a JSON object")])
    for path, reason in () if text_checked else _text_problems(data, ""):
        problem(path or "(line)", reason)
    if issues:
        # Text that cannot be stored is refused before any other rule reads it.
        raise _LineProblems(issues)

    question_id = _required_str(data, "question_id", problem)
    question = _required_str(data, "question", problem)
    run_name = run if run else _required_str(data, "run", problem, hint="or pass --run")
    answer = data.get("answer")
    if not isinstance(answer, str):
        problem("answer", "missing" if answer is None else "must be a string")
        answer = ""
    elif len(answer) > MAX_TEXT_CHARS:
        problem("answer", f"longer than {MAX_TEXT_CHARS} characters")
    external_id = optional_str(data.get("external_id"), "external_id", problem).strip()
    if len(external_id) > 200:
        problem("external_id", "longer than 200 characters")
    answerable = data.get("answerable")
    if answerable is not None and not isinstance(answerable, bool):
        problem("answerable", "must be true, false or null")
        answerable = None

    passages = _passages(data.get("passages"), problem)
    known_ids = {canonical_passage_id(p.passage_id) for p in passages}
    gold = _gold(data.get("gold"), problem)

    claims_split = "claims" not in data or data.get("claims") is None
    if claims_split:
        claims = _split_claims(answer, problem)
    else:
        claims = _claims(data.get("claims"), problem)

    warnings: list[ImportIssue] = []
    if not claims_split:
        # Markers in the text that no claim cites are worth a look, not a failure.
        warnings.extend(ImportIssue(line, "answer", message) for message in marker_problems(answer))
    known_sources = {normalize_source(p.source) for p in passages}
    for i, claim in enumerate(claims):
        n_sent = 0
        for j, citation in enumerate(claim.citations):
            if citation.passage_id is None:
                n_sent += normalize_source(citation.source) in known_sources
            elif canonical_passage_id(citation.passage_id) in known_ids:
                n_sent += 1
            else:
                warnings.append(
                    ImportIssue(line, f"claims[{i}].citations[{j}]",
                                f"passage id {citation.passage_id!r} was not sent with this answer: "
                                "kept and flagged as a fabricated citation")
                )
        for k, given in enumerate(claim.labels):
            broken = label_problem(given.label, n_citations=len(claim.citations), n_sent=n_sent)
            if broken is not None and broken.code == "supported_on_fabricated":
                problem(f"claims[{i}].labels[{k}].label" if claim.label is None else f"claims[{i}].label",
                        broken.message)
    if issues:
        raise _LineProblems(issues)
    return AnswerRecord(
        line=line,
        question_id=question_id,
        question=question,
        run=run_name,
        answer=answer,
        answerable=answerable,
        passages=passages,
        claims=claims,
        gold=gold,
        claims_split=claims_split,
        warnings=warnings,
        external_id=external_id,
    )


def _text_problems(value: Any, path: str) -> Iterator[tuple[str, str]]:
    """``(field, reason)`` for every string in the decoded line that cannot be
    stored (``labeling.names.text_problem``)."""
    if isinstance(value, str):
        reason = text_problem(value, document=bool(_DOCUMENT_TEXT.fullmatch(path)))
        if reason:
            yield path, reason
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _text_problems(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list):
        for k, item in enumerate(value):
            yield from _text_problems(item, f"{path}[{k}]")


# Texts of retrieved documents, kept as they were sent (labeling.names.text_problem).
_DOCUMENT_TEXT = re.compile(r"(passages|gold\.references)\[\d+\]\.text")
_ID_RULES = {"question_id": validate_question_id, "run": validate_run_name}


def _required_str(data: dict, key: str, problem, *, hint: str = "") -> str:
    value = data.get(key)
    if isinstance(value, int) and not isinstance(value, bool) and key == "question_id":
        value = str(value)
    if not isinstance(value, str) or not value.strip():
        what = "missing" if value is None else "must be a non-empty string"
        problem(key, f"{what}{' (' + hint + ')' if hint else ''}")
        return ""
    if key in _ID_RULES:
        value, reason = _checked_id(key, value)
        if reason:
            problem(key, reason)
            return ""
        return value
    if len(value) > MAX_TEXT_CHARS:
        problem(key, f"longer than {MAX_TEXT_CHARS:,} characters")
        return ""
    return value


@functools.lru_cache(maxsize=1024)
def _checked_id(key: str, value: str) -> tuple[str, str]:
    """``labeling.names.clean`` by ``_ID_RULES[key]`` (ids are stored in normal
    form, so look-alikes meet) as ``(value, "")``, or ``("", why it is refused)``.
    Memoized: a file names its run on every line."""
    try:
        return clean(value, _ID_RULES[key]), ""
    except ValidationError as exc:
        return "", " ".join(exc.messages)


def _passages(value: Any, problem) -> list[PassageRecord]:
    if value is None:
        return []
    if not isinstance(value, list):
        problem("passages", "must be a list")
        return []
    passages: list[PassageRecord] = []
    seen: dict[str, int] = {}
    for i, item in enumerate(value):
        field = f"passages[{i}]"
        if not isinstance(item, dict):
            problem(field, "must be an object with id, source, text")
            continue
        passage_id = item_str(item, "id", field, problem).strip()
        if not passage_id:
            problem(f"{field}.id", "missing")
            continue
        if len(passage_id) > 200:
            problem(f"{field}.id", "longer than 200 characters")
            continue
        key = canonical_passage_id(passage_id)
        if key in seen:
            problem(f"{field}.id", f"duplicate passage id {passage_id!r} (also passages[{seen[key]}])")
            continue
        seen[key] = i
        source = item_str(item, "source", field, problem)
        if len(source) > 1000:
            problem(f"{field}.source", "longer than 1000 characters")
        text = item_str(item, "text", field, problem)
        passages.append(PassageRecord(passage_id=passage_id, source=source, text=text))
    return passages


def _claims(value: Any, problem) -> list[ClaimRecord]:
    if not isinstance(value, list):
        problem("claims", "must be a list of claims")
        return []
    claims: list[ClaimRecord] = []
    indexes: dict[int, int] = {}
    for i, item in enumerate(value):
        field = f"claims[{i}]"
        if not isinstance(item, dict):
            problem(field, "must be an object with text and citations")
            continue
        text = item.get("text")
        if not isinstance(text, str) or not text.strip():
            problem(f"{field}.text", "missing or blank")
            text = ""
        index = item.get("index", item.get("claim_index", i))
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index <= MAX_SMALL_NUMBER:
            problem(f"{field}.index", f"must be a whole number from 0 to {MAX_SMALL_NUMBER}")
            index = i
        elif index in indexes:
            problem(f"{field}.index", f"duplicate claim index {index} (also claims[{indexes[index]}])")
        indexes.setdefault(index, i)
        citations = _citations(item.get("citations"), field, problem)
        label, justification, reviewer, labeled_at = claim_label(item, field, len(citations), problem)
        labels: list[LabelRecord] = []
        if item.get("labels") is not None:
            if label is not None:
                problem(f"{field}.labels", "give the claim's labels either as label (one reviewer) or as labels "
                                           "(a list, one entry per reviewer), not both")
            labels = claim_labels(item.get("labels"), field, len(citations), problem)
        elif label is not None:
            labels = [LabelRecord(reviewer=reviewer or None, label=label, justification=justification,
                                  labeled_at=labeled_at)]
        credit_judgments(citations, reviewer, labels, field, problem)
        factual = item.get("factual", True)
        if factual is None:
            factual = True
        elif not isinstance(factual, bool):
            problem(f"{field}.factual", f"must be true or false (got {factual!r})")
            factual = True
        claims.append(
            ClaimRecord(
                text=text.strip(),
                citations=citations,
                index=index,
                label=label,
                justification=justification,
                reviewer=reviewer or None,
                factual=factual,
                labels=labels,
            )
        )
    claims.sort(key=lambda c: c.index)
    return claims


def _citations(value: Any, field: str, problem) -> list[CitationRecord]:
    if value is None:
        return []
    if not isinstance(value, list):
        problem(f"{field}.citations", "must be a list")
        return []
    citations = []
    for j, item in enumerate(value):
        cfield = f"{field}.citations[{j}]"
        if isinstance(item, (str, int)) and not isinstance(item, bool):
            citations.append(CitationRecord(passage_id=str(item)))
            continue
        if not isinstance(item, dict):
            problem(cfield, "must be an object with passage_id or source")
            continue
        passage_id = item_str(item, "passage_id", cfield, problem).strip()
        source = item_str(item, "source", cfield, problem).strip()
        if not passage_id and not source:
            problem(cfield, "needs passage_id or source")
            continue
        if len(passage_id) > 200:
            problem(f"{cfield}.passage_id", "longer than 200 characters")
            continue
        if len(source) > 1000:
            problem(f"{cfield}.source", "longer than 1000 characters")
            continue
        span = item_str(item, "span", cfield, problem)
        judgment = item.get("judgment")
        if judgment is not None:
            try:
                judgment = check_judgment(judgment)
            except ValueError:
                problem(f"{cfield}.judgment", f"unknown judgment {judgment!r} (expected one of "
                                              f"{', '.join(JUDGMENTS)} or null)")
                judgment = None
        evidence = item_str(item, "evidence", cfield, problem).strip()
        if len(evidence) > MAX_JUSTIFICATION_CHARS:
            problem(f"{cfield}.evidence", f"{len(evidence):,} characters long; the limit is "
                                          f"{MAX_JUSTIFICATION_CHARS:,}")
        if evidence and judgment is None:
            problem(f"{cfield}.evidence", "evidence needs a judgment of the citation (FULL, PARTIAL, NONE or "
                                          "UNJUDGEABLE)")
        judgments = citation_judgments(item.get("judgments"), cfield, problem)
        if judgments and judgment is not None:
            problem(f"{cfield}.judgments", "give the citation's judgment either as judgment (the claim's reviewer) "
                                           "or as judgments (a list, one entry per reviewer), not both")
        citations.append(CitationRecord(passage_id=passage_id or None, source=source or None, span=span.strip(),
                                        judgment=judgment, evidence=evidence, judgments=judgments))
    return citations


def _split_claims(answer: str, problem) -> list[ClaimRecord]:
    sentences, found = split_claims(answer)
    for message in found:
        problem("answer", message)
    return [
        ClaimRecord(text=s.text, citations=[CitationRecord(passage_id=i) for i in s.cited_ids], index=n)
        for n, s in enumerate(sentences)
    ]


def _gold(value: Any, problem) -> GoldRecord | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        problem("gold", "must be an object")
        return None
    gold = GoldRecord()
    ids = value.get("supporting_ids")
    if ids is not None:
        if not isinstance(ids, list) or not all(isinstance(i, (str, int)) and not isinstance(i, bool) for i in ids):
            problem("gold.supporting_ids", "must be a list of passage ids")
        else:
            gold.supporting_ids = list(dict.fromkeys(str(i).strip() for i in ids))
            for k, passage_id in enumerate(gold.supporting_ids):
                if len(passage_id) > 200:
                    problem(f"gold.supporting_ids[{k}]", "longer than 200 characters")
    references = value.get("references")
    if references is not None:
        if not isinstance(references, list):
            problem("gold.references", "must be a list of {source, text}")
        else:
            gold.references = []
            for k, ref in enumerate(references):
                if not isinstance(ref, dict):
                    problem(f"gold.references[{k}]", "must be an object with source and text")
                    continue
                source = item_str(ref, "source", f"gold.references[{k}]", problem)
                text = item_str(ref, "text", f"gold.references[{k}]", problem)
                if not source.strip() and not text.strip():
                    problem(f"gold.references[{k}]", "needs a source or a text")
                    continue
                if len(source.strip()) > 1000:
                    problem(f"gold.references[{k}].source", "longer than 1000 characters")
                gold.references.append((source.strip(), text))
    sources = value.get("expected_sources")
    if sources is not None:
        if not isinstance(sources, list) or not all(isinstance(s, str) for s in sources):
            problem("gold.expected_sources", "must be a list of source names")
        else:
            gold.expected_sources = list(dict.fromkeys(s.strip() for s in sources if s.strip()))
            for k, source in enumerate(gold.expected_sources):
                if len(source) > 1000:
                    problem(f"gold.expected_sources[{k}]", "longer than 1000 characters")
    return gold
