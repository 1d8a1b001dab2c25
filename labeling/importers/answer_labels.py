"""The labels and citation judgments a claim of an answers file carries
(SPEC §6: several reviewers per claim): a single ``label`` (with
``justification``, ``reviewer``, ``labeled_at``), a ``labels`` list of one
object per reviewer, and per citation a single ``judgment`` or a
``judgments`` list. Parsed for ``labeling.importers.answers_jsonl`` (which the
spreadsheet format goes through too); every problem is reported through the
caller's ``problem(field, reason)``. No ORM.
"""

from __future__ import annotations

import functools
from datetime import UTC, datetime
from typing import Any

from django.core.exceptions import ValidationError

from labeling.importers.records import CitationRecord, JudgmentRecord, LabelRecord
from labeling.limits import MAX_JUSTIFICATION_CHARS
from labeling.names import normalize_name, validate_reviewer_name
from scoring.judgments import JUDGMENTS, check_judgment
from scoring.labels import LABEL_VALUES, label_problem


def optional_str(value: Any, field: str, problem) -> str:
    """``value`` as text: "" for None, a number's digits, else reported under
    ``field`` as "must be a string" and ""."""
    if value is None:
        return ""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str):
        problem(field, "must be a string")
        return ""
    return value


def item_str(item: dict, key: str, where: str, problem) -> str:
    """:func:`optional_str` of ``item[key]``, reported under ``where.key``. The
    field's name is built only for a problem: an import reads several such
    fields per claim, and formatting each name up front was a tenth of it."""
    value = item.get(key)
    if value.__class__ is str:
        return value
    if value is None:
        return ""
    return optional_str(value, f"{where}.{key}", problem)


def claim_label(item: dict, field: str, n_citations: int,
                problem) -> tuple[str | None, str, str | None, datetime | None]:
    """``(label, justification, reviewer, labeled_at)`` of one label object: a
    claim's single label, or one entry of its ``labels`` list. Every bad key
    is reported under ``field``; a bad value comes back as None (or "")."""
    given = item.get("label")
    label = given.strip().upper() if isinstance(given, str) else None
    if given is not None:
        if label not in LABEL_VALUES:
            expected = ", ".join(LABEL_VALUES)
            problem(f"{field}.label", f"unknown label {given!r} (expected one of {expected} or null)")
            label = None
        # Imported datasets keep their annotators' labels as given: no justification check.
        elif (broken := label_problem(label, n_citations=n_citations)) is not None:
            problem(f"{field}.{broken.field}", broken.message)
    justification = item_str(item, "justification", field, problem).strip()
    if len(justification) > MAX_JUSTIFICATION_CHARS:
        problem(f"{field}.justification", f"{len(justification):,} characters long; the limit is "
                                          f"{MAX_JUSTIFICATION_CHARS:,} (as in the review page)")
    reviewer = reviewer_field(item.get("reviewer"), field, problem)
    labeled_at = item.get("labeled_at")
    if labeled_at is not None:
        labeled_at = labeled_time(labeled_at, f"{field}.labeled_at", problem)
    return label, justification, reviewer, labeled_at


def reviewer_field(value: Any, where: str, problem) -> str | None:
    """A reviewer name in normal form, or None (absent or bad, reported under
    ``where.reviewer``)."""
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        problem(f"{where}.reviewer", "must be a non-empty string or null")
        return None
    name, reason = reviewer_name(value)
    if reason:
        problem(f"{where}.reviewer", reason)
    return name


def labeled_time(value: Any, field: str, problem) -> datetime | None:
    """An aware UTC datetime from an ISO 8601 string (``2025-01-31T09:15:00Z``;
    a time without an offset is UTC, as exports write it); None when absent."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, datetime):
        moment = value
    elif isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            shown = value if len(value) <= 40 else value[:40] + "…"
            problem(field, f"expected a time like 2025-01-31T09:15:00Z, got {shown!r}")
            return None
    else:
        problem(field, f"expected a time like 2025-01-31T09:15:00Z, got {value!r}")
        return None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def claim_labels(value: Any, field: str, n_citations: int, problem) -> list[LabelRecord]:
    """A claim's ``labels`` list: one object ``{reviewer, label, justification,
    labeled_at}`` per reviewer; a reviewer named twice is an error (a claim
    holds one current label per reviewer)."""
    if not isinstance(value, list):
        problem(f"{field}.labels", "must be a list of {reviewer, label, justification, labeled_at}")
        return []
    labels: list[LabelRecord] = []
    seen: dict[str | None, int] = {}
    for k, item in enumerate(value):
        where = f"{field}.labels[{k}]"
        if not isinstance(item, dict):
            problem(where, "must be an object with reviewer, label, justification, labeled_at")
            continue
        if item.get("label") is None:
            problem(f"{where}.label", "missing (an entry of labels is one reviewer's label)")
            continue
        label, justification, reviewer, labeled_at = claim_label(item, where, n_citations, problem)
        if label is None:
            continue
        if reviewer in seen:
            who = repr(reviewer) if reviewer else "the import's reviewer (no reviewer named)"
            problem(f"{where}.reviewer", f"{who} already labels this claim in labels[{seen[reviewer]}]: one "
                                         "label per reviewer and claim")
            continue
        seen[reviewer] = k
        labels.append(LabelRecord(reviewer=reviewer, label=label, justification=justification,
                                  labeled_at=labeled_at))
    return labels


def credit_judgments(citations: list[CitationRecord], reviewer: str | None, labels: list[LabelRecord],
                      field: str, problem) -> None:
    """Fill each citation's ``judgments``: a single ``judgment`` is the claim's
    reviewer's (SPEC §6), which a claim labeled by several reviewers does not
    name; a ``judgments`` list names its reviewers itself."""
    for j, citation in enumerate(citations):
        if citation.judgment is None:
            continue
        if len(labels) > 1:
            problem(f"{field}.citations[{j}].judgment", "the claim has several reviewers' labels: give this "
                                                        "citation's judgments as judgments: [{reviewer, judgment, "
                                                        "evidence}]")
            continue
        who = labels[0].reviewer if labels else reviewer
        citation.judgments.insert(0, JudgmentRecord(reviewer=who, judgment=citation.judgment,
                                                    evidence=citation.evidence))


@functools.lru_cache(maxsize=1024)
def reviewer_name(value: str) -> tuple[str, str]:
    """``value`` in normal form and why it is not a reviewer name ("" when it is).
    Cached: a file names the same few reviewers on every claim."""
    name = normalize_name(value)
    try:
        validate_reviewer_name(name)
    except ValidationError as exc:
        return name, " ".join(exc.messages)
    return name, ""


def citation_judgments(value: Any, field: str, problem) -> list[JudgmentRecord]:
    """A citation's ``judgments`` list: ``{reviewer, judgment, evidence}`` per
    reviewer (SPEC §4.3b); a reviewer named twice is an error."""
    if value is None:
        return []
    if not isinstance(value, list):
        problem(f"{field}.judgments", "must be a list of {reviewer, judgment, evidence}")
        return []
    judgments: list[JudgmentRecord] = []
    seen: dict[str | None, int] = {}
    for k, item in enumerate(value):
        where = f"{field}.judgments[{k}]"
        if not isinstance(item, dict):
            problem(where, "must be an object with reviewer, judgment, evidence")
            continue
        reviewer = reviewer_field(item.get("reviewer"), where, problem)
        try:
            judgment = check_judgment(item.get("judgment"))
        except (ValueError, TypeError, AttributeError):
            problem(f"{where}.judgment", f"unknown judgment {item.get('judgment')!r} (expected one of "
                                         f"{', '.join(JUDGMENTS)})")
            continue
        evidence = item_str(item, "evidence", where, problem).strip()
        if len(evidence) > MAX_JUSTIFICATION_CHARS:
            problem(f"{where}.evidence", f"{len(evidence):,} characters long; the limit is "
                                         f"{MAX_JUSTIFICATION_CHARS:,}")
        if reviewer in seen:
            who = repr(reviewer) if reviewer else "the import's reviewer (no reviewer named)"
            problem(f"{where}.reviewer", f"{who} already judges this citation in judgments[{seen[reviewer]}]")
            continue
        seen[reviewer] = k
        judgments.append(JudgmentRecord(reviewer=reviewer, judgment=judgment, evidence=evidence))
    return judgments
