"""Hidden gold checks (SPEC §4.4): a lead marks claims of a run as gold, each
with its gold label and a reason, and sets how the run uses them.

Writes (keyword-only, atomic, ValidationError naming what to fix; nothing
written when they raise): :func:`gold_mark` (from the lead's adjudication, the
lead's own label, or a label and reason given), :func:`gold_unmark`,
:func:`gold_import` (a file of rows ``question_id, claim_index, label,
reason``; :func:`gold_rows_read` parses one), :func:`quality_settings_set`.
The queue serves gold claims (``labeling.review.queue``); ``labeling.team.quality`` scores
reviewers against them.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Exists, OuterRef

from labeling.audit import audit_record, claim_target
from labeling.limits import MAX_JUSTIFICATION_CHARS
from labeling.models import (
    Adjudication,
    AuditAction,
    Citation,
    Claim,
    GoldClaim,
    GoldSource,
    Label,
    LabelValue,
    Reviewer,
    Run,
)
from labeling.names import normalize_name
from labeling.runs import labels_changed

GOLD_VALUES = (LabelValue.SUPPORTED.value, LabelValue.UNSUPPORTED.value)
GOLD_FILE_COLUMNS = ("question_id", "claim_index", "label", "reason")


def _reason(reason: str) -> str:
    reason = (reason or "").strip()
    if not reason:
        raise ValidationError("Give the reason for the gold label: reviewers read it in feedback mode.",
                              code="reason_required")
    if len(reason) > MAX_JUSTIFICATION_CHARS:
        raise ValidationError(f"The reason is {len(reason):,} characters long; the limit is "
                              f"{MAX_JUSTIFICATION_CHARS:,}.", code="reason_too_long")
    return reason


def _write(*, run: Run, claim: Claim, lead: Reviewer | None, value: str, reason: str, source: str) -> GoldClaim:
    """Lock ``claim``, check it can be gold, end its current gold label and record this one."""
    state = (Claim.objects.select_for_update().filter(pk=claim.pk, answer__run=run)
             .annotate(is_cited=Exists(Citation.objects.filter(claim=OuterRef("pk"))))
             .values_list("revision", "is_cited", "factual").first())
    if state is None:
        raise ValidationError(f"Claim {claim.pk} is not a claim of run {run.name!r} (merged meanwhile?).",
                              code="other_run")
    revision, cited, factual = state
    if not cited:
        raise ValidationError(f"Claim {claim.index} has no citation: it is UNCITED, nothing to check.",
                              code="uncited")
    if not factual:
        raise ValidationError(f"Claim {claim.index} is marked not factual: it leaves every count.",
                              code="non_factual")
    GoldClaim.objects.filter(claim_id=claim.pk, is_current=True).update(is_current=False)
    return GoldClaim.objects.create(run=run, claim_id=claim.pk, value=value, reason=reason, source=source,
                                    lead=lead, claim_revision=revision)


def gold_mark(*, run: Run, claim: Claim, lead: Reviewer, source: str, value: str = "",
              reason: str = "") -> GoldClaim:
    """Mark ``claim`` of ``run`` gold (a current gold label replaces the last one).

    ``source``: ``adjudication`` (the value of the claim's current adjudication;
    the reason given, else the adjudication's), ``label`` (the value of
    ``lead``'s own current label; the reason given, else its justification) or
    ``file``/any value given (``value`` and ``reason`` as given). The caller has
    checked that ``lead`` leads the project.

    Raises ValidationError for an unknown source, no adjudication or own label
    to take the value from, a value other than SUPPORTED/UNSUPPORTED, a blank
    reason, or a claim that is not the run's, not cited or not factual.
    """
    with transaction.atomic():
        if source == GoldSource.ADJUDICATION:
            verdict = Adjudication.objects.filter(claim_id=claim.pk, is_current=True).first()
            if verdict is None:
                raise ValidationError(f"Claim {claim.index} has no adjudication to take the gold label from.",
                                      code="no_adjudication")
            value, reason = verdict.value, reason or verdict.reason
        elif source == GoldSource.LABEL:
            own = Label.objects.filter(claim_id=claim.pk, reviewer=lead, is_current=True).first()
            if own is None or own.value not in GOLD_VALUES:
                raise ValidationError(f"You have no SUPPORTED or UNSUPPORTED label on claim {claim.index}: label "
                                      "it first, or adjudicate it.", code="no_label")
            value, reason = own.value, reason or own.justification
        elif source != GoldSource.FILE:
            raise ValidationError(f"Unknown gold source {source!r}: use adjudication, label or file.",
                                  code="bad_source")
        if value not in GOLD_VALUES:
            raise ValidationError(f"A gold label is SUPPORTED or UNSUPPORTED, not {value!r}.", code="bad_value")
        gold = _write(run=run, claim=claim, lead=lead, value=value, reason=_reason(reason), source=source)
        labels_changed(run=run, labels=False)
        audit_record(action=AuditAction.GOLD, actor=lead, run=run, target=claim_target(claim), claim_id=claim.pk,
                     detail={"value": value, "source": source, "reason": gold.reason[:300]})
        return gold


def gold_unmark(*, run: Run, claim: Claim, lead: Reviewer) -> bool:
    """End the current gold label of ``claim`` (kept in history); False when it had none."""
    with transaction.atomic():
        ended = GoldClaim.objects.filter(run=run, claim_id=claim.pk, is_current=True).update(is_current=False)
        if ended:
            labels_changed(run=run, labels=False)
            audit_record(action=AuditAction.GOLD, actor=lead, run=run, target=claim_target(claim),
                         claim_id=claim.pk, detail={"unmarked": True})
        return bool(ended)


@dataclass(frozen=True)
class GoldRow:
    """One row of a gold file: its line (1-based, the header is line 1 in a CSV)."""

    line: int
    question_id: str
    claim_index: int
    label: str
    reason: str


def gold_rows_read(data: bytes, *, name: str) -> list[GoldRow]:
    """The rows of a gold file: JSON Lines (``.jsonl``/``.json``: one object a line)
    or CSV (anything else, a header row naming ``question_id, claim_index, label,
    reason``; other columns ignored). Raises ValidationError listing every bad
    line with its field and reason (nothing is read then)."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValidationError(f"{name}: not UTF-8 text (byte {exc.start}); save it as UTF-8.") from None
    records: list[tuple[int, dict]] = []
    problems: list[str] = []
    if name.lower().endswith((".jsonl", ".json")):
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                problems.append(f"line {number}: not JSON ({exc.msg})")
                continue
            if not isinstance(record, dict):
                problems.append(f"line {number}: expected an object with {', '.join(GOLD_FILE_COLUMNS)}")
                continue
            records.append((number, record))
    else:
        reader = csv.DictReader(io.StringIO(text))
        missing = [c for c in GOLD_FILE_COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise ValidationError(f"{name}: line 1: the header lacks column(s) {', '.join(missing)} "
                                  f"(needed: {', '.join(GOLD_FILE_COLUMNS)}).")
        records = [(number, row) for number, row in enumerate(reader, start=2)]
    rows = []
    for number, record in records:
        question_id = normalize_name(str(record.get("question_id") or ""))
        index, label = record.get("claim_index"), str(record.get("label") or "").strip().upper()
        reason = str(record.get("reason") or "").strip()
        if not question_id:
            problems.append(f"line {number}: question_id: missing")
        try:
            index = int(str(index).strip())
            if index < 1:
                raise ValueError
        except (TypeError, ValueError):
            problems.append(f"line {number}: claim_index: {record.get('claim_index')!r} is not a 1-based number")
            index = 0
        if label not in GOLD_VALUES:
            problems.append(f"line {number}: label: {record.get('label')!r} is not SUPPORTED or UNSUPPORTED")
        if not reason:
            problems.append(f"line {number}: reason: missing (reviewers read it in feedback mode)")
        elif len(reason) > MAX_JUSTIFICATION_CHARS:
            problems.append(f"line {number}: reason: longer than {MAX_JUSTIFICATION_CHARS:,} characters")
        rows.append(GoldRow(number, question_id, index, label, reason))
    if problems:
        raise ValidationError([f"{name}: {problem}" for problem in problems])
    if not rows:
        raise ValidationError(f"{name}: no rows.")
    return rows


def gold_import(*, run: Run, rows: list[GoldRow], actor: Reviewer | None) -> int:
    """Mark the claims the rows name (``question_id`` + ``claim_index`` in ``run``)
    gold with the rows' labels and reasons (source ``file``), all or nothing;
    returns how many. Raises ValidationError listing every row that names no claim
    of the run, a claim without citations or not factual, or a claim two rows
    name; nothing is written then. One audit event for the import."""
    with transaction.atomic():
        keys = {(row.question_id, row.claim_index) for row in rows}
        claims = {(c.answer.question_key, c.index): c for c in Claim.objects.filter(
            answer__run=run, answer__question_key__in={q for q, _ in keys}).select_related("answer")
            .annotate(is_cited=Exists(Citation.objects.filter(claim=OuterRef("pk"))))}
        problems, seen = [], {}
        for row in rows:
            key = (row.question_id, row.claim_index)
            claim = claims.get(key)
            if claim is None:
                problems.append(f"line {row.line}: question_id, claim_index: run {run.name!r} has no claim "
                                f"{row.claim_index} of question {row.question_id!r}")
            elif not claim.is_cited:
                problems.append(f"line {row.line}: claim_index: claim {row.claim_index} of {row.question_id!r} "
                                "has no citation (UNCITED): nothing to check")
            elif not claim.factual:
                problems.append(f"line {row.line}: claim_index: claim {row.claim_index} of {row.question_id!r} "
                                "is marked not factual")
            elif key in seen:
                problems.append(f"line {row.line}: question_id, claim_index: the same claim as line {seen[key]}")
            seen.setdefault(key, row.line)
        if problems:
            raise ValidationError(problems)
        for row in rows:
            _write(run=run, claim=claims[(row.question_id, row.claim_index)], lead=actor, value=row.label,
                   reason=row.reason, source=GoldSource.FILE)
        labels_changed(run=run, labels=False)
        audit_record(action=AuditAction.GOLD, actor=actor, run=run, target=f"{len(rows)} gold claims from a file",
                     detail={"imported": len(rows)})
        return len(rows)


def quality_settings_set(*, run: Run, gold_rate: float, feedback: bool, min_lower: float | None,
                         min_gold: int | None, exclude_unqualified: bool) -> Run:
    """Set how ``run`` uses its gold claims (``Run.gold_rate``, ``feedback``, the
    qualification rule, ``exclude_unqualified``). Raises ValidationError for a rate
    outside [0, 1], half a rule (a bound without a count or the reverse), a bound
    outside [0, 1] or a count below 1, or exclusion without a rule."""
    if not 0 <= gold_rate <= 1:
        raise ValidationError(f"The gold rate is a share of each reviewer's work between 0 and 1 (0.05 = 5 %), "
                              f"not {gold_rate!r}.", code="bad_rate")
    if (min_lower is None) != (min_gold is None):
        raise ValidationError("A qualification rule needs both its lower bound and its number of gold claims "
                              "(e.g. 0.7 after 20), or neither.", code="half_rule")
    if min_lower is not None and not 0 <= min_lower <= 1:
        raise ValidationError(f"The rule's lower bound is an accuracy between 0 and 1, not {min_lower!r}.",
                              code="bad_bound")
    if min_gold is not None and min_gold < 1:
        raise ValidationError(f"The rule needs at least 1 gold claim, not {min_gold!r}.", code="bad_count")
    if exclude_unqualified and min_lower is None:
        raise ValidationError("Leaving out unqualified reviewers' labels needs a qualification rule.",
                              code="no_rule")
    with transaction.atomic():
        Run.objects.filter(pk=run.pk).update(gold_rate=gold_rate, feedback=feedback, qualify_min_lower=min_lower,
                                             qualify_min_gold=min_gold, exclude_unqualified=exclude_unqualified)
        run.gold_rate, run.feedback, run.exclude_unqualified = gold_rate, feedback, exclude_unqualified
        run.qualify_min_lower, run.qualify_min_gold = min_lower, min_gold
        return run
