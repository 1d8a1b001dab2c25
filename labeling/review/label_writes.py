"""Label writes of the labeling screen (STYLE §3, SPEC §3): save and undo a label.

Every service is keyword-only, runs inside ``transaction.atomic`` and raises
``ValidationError`` with a message a reviewer can act on; nothing is written when
it raises. Each locks the claim row it changes (``select_for_update``; on SQLite
the IMMEDIATE transaction mode serializes writers instead), and ``label_save``
refuses to overwrite a label its caller has not seen (``LabelConflict``).
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from labeling.audit import audit_record, claim_target
from labeling.limits import MAX_JUSTIFICATION_CHARS
from labeling.models import (
    Adjudication,
    AuditAction,
    Citation,
    CitationJudgment,
    Claim,
    ClaimLease,
    GoldClaim,
    Guidelines,
    Label,
    LabelValue,
    Resolution,
    Reviewer,
    SendBack,
)
from labeling.runs import labels_changed
from scoring.labels import label_problem


class LabelConflict(ValidationError):
    """The label (or the claim) changed since the reviewer's form was rendered.

    ``newer`` is the reviewer's current label that the form did not know about
    (``None`` when the conflict is a claim revision or a removed label);
    ``claim`` is the claim the form was for.
    """

    def __init__(self, message: str, *, claim: Claim, newer: Label | None):
        super().__init__(message, code="conflict")
        self.claim = claim
        self.newer = newer


def claim_gone(claim: Claim) -> ValidationError:
    """The conflict of a write to ``claim`` after someone else merged it into
    its neighbour (the claim no longer exists): nothing was written."""
    return ValidationError(
        f"Claim {claim.index} was merged into its neighbour by someone else after you opened it: nothing was "
        "saved. Read the answer's claims as they are now and try again.", code="conflict")


def lock_claim(claim: Claim) -> Claim:
    """Re-read ``claim`` under a row lock, with its answer, run and project, and
    ``is_cited`` (whether it has a citation) in the same query. Raises
    :func:`claim_gone` when a concurrent merge deleted it."""
    locked = (
        Claim.objects.select_for_update(of=("self",))
        .select_related("answer__run__project")
        .annotate(is_cited=Exists(Citation.objects.filter(claim=OuterRef("pk"))))
        .filter(pk=claim.pk).first()
    )
    if locked is None:
        raise claim_gone(claim)
    return locked


def _tables() -> dict[str, str]:
    quote = connection.ops.quote_name
    return {name: quote(model._meta.db_table)
            for name, model in (("claim", Claim), ("citation", Citation), ("guidelines", Guidelines),
                                ("label", Label), ("lease", ClaimLease), ("send_back", SendBack))}


def _for_update() -> str:
    """``FOR UPDATE`` where the database has row locks (PostgreSQL); on SQLite nothing
    (its IMMEDIATE transaction holds the whole database)."""
    return "FOR UPDATE" if connection.features.has_select_for_update else ""


# What label_save re-reads of claim %s under its row lock: revision, index, whether it is
# cited, whether a citation was sent (not fabricated), and project %s's guidelines in force.
_SAVE_STATE_SQL = """
SELECT c.revision, c."index",
  EXISTS (SELECT 1 FROM {citation} ci WHERE ci.claim_id = c.id),
  EXISTS (SELECT 1 FROM {citation} ci WHERE ci.claim_id = c.id AND NOT ci.fabricated),
  (SELECT g.number FROM {guidelines} g WHERE g.project_id = %s ORDER BY g.number DESC LIMIT 1)
FROM {claim} c WHERE c.id = %s
{lock}
"""
# The current label of reviewer %s on claim %s, under its row lock.
_CURRENT_LABEL_SQL = """
SELECT * FROM {label} l WHERE l.claim_id = %s AND l.reviewer_id = %s AND l.is_current
ORDER BY l.id LIMIT 1
{lock}
"""
_LEASE_END_SQL = "DELETE FROM {lease} WHERE claim_id = %s AND reviewer_id = %s"
_REWORKED_SQL = """
UPDATE {send_back} SET resolved_at = %s, resolution = %s
WHERE claim_id = %s AND reviewer_id = %s AND resolved_at IS NULL
"""


def label_save(
    *, claim: Claim, reviewer: Reviewer, value: str, justification: str, base_revision: int,
    base_label_id: int | None,
) -> Label:
    """Record ``reviewer``'s label on ``claim`` (SPEC §3).

    ``base_revision`` is the claim revision the reviewer saw and
    ``base_label_id`` the id of their current label on the claim when the form
    was rendered (``None``: they had none). The previous current label stays in
    history (``is_current=False``). Saving exactly the current value and
    justification again returns the current label unchanged (a double submit
    is harmless), unless a lead sent that label back (SPEC §4.4): then it is
    saved anew and resolves the send-back. The label records the project's
    guidelines version in force (``Label.guidelines_version``).

    Raises:
    - ``LabelConflict`` when the claim was edited since (revision differs) or
      the reviewer's current label is not ``base_label_id`` (another tab saved
      or undid one): nothing is saved, ``exc.newer`` is the label now current.
    - ``ValidationError`` for an unknown value, UNCITED on a cited claim,
      SUPPORTED/UNSUPPORTED on a claim without citations, or a blank
      justification where required (always for UNSUPPORTED; for SUPPORTED when
      ``Project.require_justification_for_supported``).
    - ``LabelConflict`` too when the claim no longer exists (merged into its
      neighbour by someone else meanwhile).
    """
    justification = (justification or "").strip()
    if value not in LabelValue.values:
        raise ValidationError(
            f"Unknown label value {value!r}: choose SUPPORTED or UNSUPPORTED.", code="invalid_value"
        )
    if len(justification) > MAX_JUSTIFICATION_CHARS:
        raise ValidationError(
            f"The justification is {len(justification):,} characters long; the limit is "
            f"{MAX_JUSTIFICATION_CHARS:,}. Shorten it and save again.", code="justification_too_long",
        )
    with transaction.atomic():
        # Only what can change under us is re-read (revision, index, citations), under the row lock,
        # with the guidelines version in force (a subquery on the project id the caller holds, so
        # no join widens the lock). In SQL, as is the current label's read: the ORM took longer
        # to build these two statements than the database to run them.
        tables = _tables()
        with connection.cursor() as cursor:
            cursor.execute(_SAVE_STATE_SQL.format(lock=_for_update(), **tables),
                           [claim.answer.run.project_id, claim.pk])
            state = cursor.fetchone()
        if state is None:
            raise LabelConflict(claim_gone(claim).messages[0], claim=claim, newer=None)
        revision, index, cited, cites_sent, guidelines_version = state
        if base_revision != revision:
            raise LabelConflict(
                f"Claim {index} was edited (split, merged or reworded) after you opened it: "
                "nothing was saved. Read the claim as it is now and label it again.",
                claim=claim, newer=None,
            )
        current = next(iter(Label.objects.raw(_CURRENT_LABEL_SQL.format(lock=_for_update(), **tables),
                                              [claim.pk, reviewer.pk])), None)
        if current is not None:
            current.reviewer = reviewer
        if (current is not None and current.value == value and current.justification == justification
                # Confirming a label a lead sent back is a relabel (SPEC §4.4), not a double submit.
                and not SendBack.objects.filter(claim_id=claim.pk, reviewer=reviewer,
                                                resolved_at__isnull=True).exists()):
            return current
        current_id = current.pk if current is not None else None
        if current_id != base_label_id:
            if current is None:
                message = (f"Your label on claim {index} was undone in another tab after you opened "
                           "it: nothing was saved. Check the claim and save again.")
            else:
                message = (f"You labeled claim {index} {current.value} in another tab after you opened "
                           "this one: nothing was saved. Compare with the newer label below and save again "
                           "to replace it.")
            raise LabelConflict(message, claim=claim, newer=current)
        problem = label_problem(
            value, n_citations=int(cited), n_sent=int(cites_sent), justification=justification,
            supported_needs_justification=claim.answer.run.project.require_justification_for_supported,
        )
        if problem is not None:
            raise ValidationError(f"Claim {index}: {problem.message}.", code=problem.code)
        if current is not None:
            current.is_current = False
            current.save(update_fields=["is_current"])
        label = Label.objects.create(
            claim=claim, reviewer=reviewer, value=value, justification=justification,
            claim_revision=revision, is_current=True, is_stale=False, supersedes=current,
            guidelines_version=guidelines_version,
        )
        with connection.cursor() as cursor:
            # The label takes the place of the reviewer's lease on the claim (labeling.review.queue):
            # the claim's overlap counts it once, under the claim's lock.
            cursor.execute(_LEASE_END_SQL.format(**tables), [claim.pk, reviewer.pk])
            # Relabeling a claim a lead sent back resolves the send-back (SPEC §4.4): one UPDATE.
            cursor.execute(_REWORKED_SQL.format(**tables), [
                connection.ops.adapt_datetimefield_value(timezone.now()), Resolution.RELABEL.value,
                claim.pk, reviewer.pk])
            reworked = cursor.rowcount
        # The one query the audit log adds to a save (its run is the one read above).
        detail = {"value": value, "previous": current.value if current is not None else None}
        if reworked:
            detail["resolves_send_back"] = True
        audit_record(action=AuditAction.LABEL, actor=reviewer, run=claim.answer.run,
                     target=claim_target(claim, index=index), claim_id=claim.pk, detail=detail)
        if reworked:
            audit_record(action=AuditAction.REWORK, actor=reviewer, run=claim.answer.run,
                         target=claim_target(claim, index=index), claim_id=claim.pk,
                         detail={"resolution": Resolution.RELABEL.value, "value": value,
                                 "previous": current.value if current is not None else None})
        # Last, so the run row stays locked for as little of the save as possible.
        labels_changed(run=claim.answer.run_id, claim=claim.pk)
        return label


def label_undo(*, claim: Claim, reviewer: Reviewer) -> Label | None:
    """Undo ``reviewer``'s current label on ``claim`` by flipping ``is_current``
    (SPEC §3: every label stays in history).

    The current label stops being current and stays in history (a non-current,
    non-stale label newer than the current one reads as "undone"); the label
    it replaced (``supersedes``), if still on the same claim revision, becomes
    current again and is returned. ``None`` means the claim is back in the
    reviewer's queue. Undoing again walks further back through history.

    Raises ValidationError when the reviewer has no current label on the claim.
    """
    with transaction.atomic():
        locked = lock_claim(claim)
        current = (
            Label.objects.select_for_update(of=("self",))
            .filter(claim=locked, reviewer=reviewer, is_current=True).first()
        )
        if current is None:
            raise ValidationError(f"You have no label on claim {locked.index} to undo.", code="nothing_to_undo")
        # The label this one replaced, not merely the one before it: after
        # save, undo, save, undo the first label comes back, never the undone one.
        previous = (
            Label.objects.select_for_update(of=("self",))
            .filter(pk=current.supersedes_id, is_stale=False, claim_revision=locked.revision).first()
            if current.supersedes_id is not None else None
        )
        current.is_current = False
        current.save(update_fields=["is_current"])
        labels_changed(run=locked.answer.run_id, claim=locked.pk)
        audit_record(action=AuditAction.UNDO, actor=reviewer, run=locked.answer.run, target=claim_target(locked),
                     claim_id=locked.pk,
                     detail={"undone": current.value, "restored": previous.value if previous is not None else None})
        if previous is None:
            return None
        previous.is_current = True
        previous.save(update_fields=["is_current"])
        return previous


def check_revision(claim: Claim, base_revision: int | None) -> None:
    if base_revision is not None and base_revision != claim.revision:
        raise ValidationError(
            f"Claim {claim.index} was changed by someone else after you opened it: nothing was changed. "
            "Read it as it is now and try again.", code="conflict",
        )


def mark_labels_stale(claim: Claim) -> int:
    """Mark every label of ``claim`` stale (SPEC §3: kept in history, no longer current); a lead's
    adjudication of the claim as it was ends too, and so do its citations' judgments (SPEC §4.3b),
    its gold label and the send-backs of its labels (SPEC §4.4: they were about the claim as it was)."""
    Adjudication.objects.filter(claim=claim, is_current=True).update(is_current=False)
    GoldClaim.objects.filter(claim=claim, is_current=True).update(is_current=False)
    SendBack.objects.filter(claim=claim, resolved_at__isnull=True).update(
        resolved_at=timezone.now(), resolution=Resolution.CLAIM_CHANGED)
    CitationJudgment.objects.filter(citation__claim=claim, is_stale=False).update(is_current=False, is_stale=True)
    labels_changed(run=claim.answer.run_id, claim=claim.pk)
    return Label.objects.filter(claim=claim, is_stale=False).update(is_current=False, is_stale=True)
