"""Send back for rework (SPEC §4.4): a lead returns one reviewer's label on a
claim with a comment; the claim comes first in that reviewer's queue
(``labeling.review.queue.priority_claim``) with the comment shown, until they relabel
it (``label_writes.label_save`` resolves it) or reply (:func:`send_back_reply`).
The audit log records the send-back (``send_back``) and its end (``rework``).

Writes: :func:`send_back_create`, :func:`send_back_reply`. Reads:
:func:`open_send_backs`, :func:`open_send_back_count`.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from labeling.audit import audit_record, claim_target
from labeling.limits import MAX_JUSTIFICATION_CHARS
from labeling.models import AuditAction, Claim, Label, Resolution, Reviewer, ReviewerKind, Run, SendBack
from labeling.runs import labels_changed


def _text(value: str, what: str) -> str:
    value = (value or "").strip()
    if not value:
        raise ValidationError(f"Write the {what}: it is what the reviewer reads.", code=f"{what}_required")
    if len(value) > MAX_JUSTIFICATION_CHARS:
        raise ValidationError(f"The {what} is {len(value):,} characters long; the limit is "
                              f"{MAX_JUSTIFICATION_CHARS:,}.", code=f"{what}_too_long")
    return value


def send_back_create(*, run: Run, claim: Claim, reviewer: Reviewer, lead: Reviewer, comment: str) -> SendBack:
    """``lead`` sends ``reviewer``'s current label on ``claim`` (of ``run``) back for
    rework with ``comment``. The caller has checked that ``lead`` leads the run's
    project.

    Raises ValidationError when the comment is blank or too long, the claim is
    not ``run``'s, ``reviewer`` is not a human reviewer or has no current label
    on the claim, or their label there is already sent back and open. Nothing
    is written then; otherwise the send-back and its audit event.
    """
    comment = _text(comment, "comment")
    if claim.answer.run_id != run.pk:
        raise ValidationError(f"Claim {claim.pk} is not a claim of run {run.name!r}.", code="other_run")
    if reviewer.kind != ReviewerKind.HUMAN:
        raise ValidationError(f"{reviewer.username} is not a human reviewer: a {reviewer.kind} labeler's labels "
                              "cannot be sent back for rework.", code="not_human")
    with transaction.atomic():
        locked = Claim.objects.select_for_update().filter(pk=claim.pk).values_list("index", flat=True).first()
        if locked is None:
            raise ValidationError("The claim was merged into its neighbour meanwhile: nothing was sent back.",
                                  code="conflict")
        label = Label.objects.filter(claim_id=claim.pk, reviewer=reviewer, is_current=True).first()
        if label is None:
            raise ValidationError(f"{reviewer.username} has no current label on claim {locked}: nothing to send "
                                  "back.", code="no_label")
        if SendBack.objects.filter(claim_id=claim.pk, reviewer=reviewer, resolved_at__isnull=True).exists():
            raise ValidationError(f"{reviewer.username}'s label on claim {locked} is already sent back and not "
                                  "yet reworked.", code="already_open")
        sent = SendBack.objects.create(run=run, claim_id=claim.pk, reviewer=reviewer, label=label, lead=lead,
                                       comment=comment)
        audit_record(action=AuditAction.SEND_BACK, actor=lead, run=run, target=claim_target(claim, index=locked),
                     claim_id=claim.pk, detail={"reviewer": reviewer.username, "label": label.value,
                                                "comment": comment[:300]})
        labels_changed(run=run, labels=False)
        return sent


def send_back_reply(*, claim: Claim, reviewer: Reviewer, reply: str) -> SendBack:
    """``reviewer`` answers the open send-back of their label on ``claim`` with
    ``reply`` instead of relabeling (they keep their label): it is resolved.

    Raises ValidationError when the reply is blank or too long or nothing of
    theirs on the claim is sent back (resolved meanwhile). Writes the
    resolution and its audit event (``rework``).
    """
    reply = _text(reply, "reply")
    with transaction.atomic():
        sent = (SendBack.objects.select_for_update().select_related("run")
                .filter(claim_id=claim.pk, reviewer=reviewer, resolved_at__isnull=True).first())
        if sent is None:
            raise ValidationError(f"Nothing of yours on claim {claim.index} is sent back for rework (it was "
                                  "resolved meanwhile).", code="not_open")
        sent.resolved_at, sent.resolution, sent.reply = timezone.now(), Resolution.REPLY, reply
        sent.save(update_fields=["resolved_at", "resolution", "reply"])
        labels_changed(run=sent.run_id, labels=False)
        audit_record(action=AuditAction.REWORK, actor=reviewer, run=sent.run, target=claim_target(claim),
                     claim_id=claim.pk, detail={"resolution": Resolution.REPLY.value, "reply": reply[:300]})
        return sent


def open_send_backs(*, run: Run) -> QuerySet[SendBack]:
    """The open send-backs of ``run``, oldest first, with their claim (answer,
    question), reviewer and lead."""
    return (SendBack.objects.filter(run=run, resolved_at__isnull=True)
            .select_related("claim__answer", "reviewer", "lead").order_by("created_at", "id"))


def open_send_back_count(*, run: Run, reviewer: Reviewer | None = None) -> int:
    """How many send-backs of ``run`` are open (the run page's count), or only
    ``reviewer``'s. One query."""
    open_ones = SendBack.objects.filter(run=run, resolved_at__isnull=True)
    return (open_ones.filter(reviewer=reviewer) if reviewer is not None else open_ones).count()
