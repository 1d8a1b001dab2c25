"""Adjudication (SPEC §4.4, the INCEpTION curation idea): claims on which the
current reviewers agree are settled by themselves; a lead works only the
conflicts and records the final label with a reason.

``adjudication_save`` is the one write (keyword-only, atomic, ValidationError
with a message a lead can act on); ``disputed_claims`` and ``dispute_view``
are the adjudication page's reads.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Exists, OuterRef, Prefetch, QuerySet

from labeling.audit import audit_record, claim_target
from labeling.limits import MAX_JUSTIFICATION_CHARS
from labeling.models import Adjudication, AuditAction, Citation, Claim, Label, LabelValue, Reviewer, Run
from labeling.models.counted import disputed_q, run_counted_q
from labeling.review.highlight import Segment, passage_segments
from labeling.runs import labels_changed

DISPUTES_LISTED = 100


def adjudication_save(*, claim: Claim, lead: Reviewer, value: str, reason: str) -> Adjudication:
    """Record ``lead``'s final ``value`` for ``claim`` with ``reason``: from now on
    the label that counts for the claim (SPEC §4.4). A previous adjudication
    stays in history, no longer current.

    The caller has checked that ``lead`` leads the claim's project. Raises
    ValidationError for a value other than SUPPORTED/UNSUPPORTED, a claim
    without citations (it is UNCITED, nothing to adjudicate) or marked not
    factual (SPEC §4.3b), or a blank or
    over-long reason.
    """
    reason = (reason or "").strip()
    if value not in (LabelValue.SUPPORTED, LabelValue.UNSUPPORTED):
        raise ValidationError(f"Adjudicate with SUPPORTED or UNSUPPORTED, not {value!r}.", code="invalid_value")
    if not reason:
        raise ValidationError("Give the reason for your verdict: it is what the reviewers will read.",
                              code="reason_required")
    if len(reason) > MAX_JUSTIFICATION_CHARS:
        raise ValidationError(f"The reason is {len(reason):,} characters long; the limit is "
                              f"{MAX_JUSTIFICATION_CHARS:,}.", code="reason_too_long")
    with transaction.atomic():
        state = (Claim.objects.select_for_update().filter(pk=claim.pk)
                 .annotate(is_cited=Exists(Citation.objects.filter(claim=OuterRef("pk"))))
                 .values_list("revision", "is_cited", "factual").first())
        if state is None:
            raise ValidationError(f"Claim {claim.index} was merged into its neighbour meanwhile: nothing was "
                                  "recorded. Open the next disputed claim.", code="conflict")
        revision, cited, factual = state
        if not factual:
            raise ValidationError(f"Claim {claim.index} is marked not factual: it leaves every count, there is "
                                  "nothing to adjudicate.", code="non_factual")
        if not cited:
            raise ValidationError(f"Claim {claim.index} has no citation: it is UNCITED, nothing to adjudicate.",
                                  code="uncited")
        Adjudication.objects.filter(claim_id=claim.pk, is_current=True).update(is_current=False)
        verdict = Adjudication.objects.create(claim_id=claim.pk, lead=lead, value=value, reason=reason,
                                              claim_revision=revision)
        audit_record(action=AuditAction.ADJUDICATE, actor=lead, run=claim.answer.run, target=claim_target(claim),
                     claim_id=claim.pk, detail={"value": value, "reason": reason[:300]})
        labels_changed(run=claim.answer.run_id, claim=claim.pk)
        return verdict


def disputed_claims(*, run: Run) -> QuerySet[Claim]:
    """The disputed claims of ``run`` (``labeling.models.counted.disputed_q``: cited,
    factual, counted current labels say both SUPPORTED and UNSUPPORTED, no current
    adjudication; whose labels count is ``run_counted_q``: never an automated
    labeler's unless it is the run's promoted judge, never those the run leaves out),
    in question/claim order, with their answer and question. Three more queries when
    the run leaves labels out (``run_exclusion``)."""
    return (Claim.objects.filter(answer__run=run).filter(disputed_q(run_counted_q(run)))
            .select_related("answer__question").order_by("answer__question_key", "index"))


@dataclass
class CitedPassage:
    citation: Citation
    segments: list[Segment]


@dataclass
class DisputeView:
    """One disputed claim as the adjudication page shows it: every current label
    (reviewer, value, justification) side by side, and its cited passages."""

    claim: Claim
    labels: list[Label]
    passages: list[CitedPassage]


def dispute_view(*, run: Run, claim_id: int | None) -> DisputeView | None:
    """The disputed claim ``claim_id`` of ``run`` (or the first one when
    ``claim_id`` is None or not disputed), ``None`` when nothing is disputed.
    Three queries: the claim (+ answer, question), its current labels (+ reviewers)
    and its citations (+ passages); four when ``claim_id`` is no disputed claim."""
    disputes = disputed_claims(run=run).prefetch_related(
        Prefetch("labels", queryset=Label.objects.filter(is_current=True).select_related("reviewer")
                 .order_by("reviewer__username"), to_attr="current_labels"),
        Prefetch("citations", queryset=Citation.objects.select_related("passage").order_by("position")),
    )
    claim = disputes.filter(pk=claim_id).first() if claim_id is not None else None
    if claim is None:
        claim = disputes.first()
    if claim is None:
        return None
    passages = []
    for citation in claim.citations.all():
        text = citation.passage.text if citation.passage is not None else ""
        segments, _found = passage_segments(text, span=citation.span, claim=claim.text)
        passages.append(CitedPassage(citation=citation, segments=segments))
    return DisputeView(claim=claim, labels=claim.current_labels, passages=passages)
