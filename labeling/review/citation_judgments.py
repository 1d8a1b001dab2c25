"""Judging each citation of a claim, and marking a claim not factual (SPEC §4.3b).

On a project with ``judge_citations`` on, a reviewer judges every citation of
a cited claim (FULL, PARTIAL, NONE, UNJUDGEABLE, with optional evidence); the
judgments propose the claim's label (``scoring.judgments.proposed_label``),
which the reviewer confirms, or overrules with a justification. Both are
written together by :func:`claim_judge`, so a claim never carries judgments
that contradict its label without a reason.

Writes are keyword-only, atomic, and raise ``ValidationError`` with a message
a reviewer can act on; nothing is written when they raise.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from django.core.exceptions import ValidationError
from django.db import transaction

from labeling.audit import audit_record, claim_target
from labeling.limits import MAX_JUSTIFICATION_CHARS
from labeling.models import AuditAction, Citation, CitationJudgment, Claim, Label, Reviewer
from labeling.review.label_writes import LabelConflict, claim_gone, label_save
from labeling.runs import claims_changed, labels_changed
from scoring.judgments import FULL, JUDGMENTS, PARTIAL, check_judgment, proposed_label


@dataclass(frozen=True)
class JudgedClaim:
    """What :func:`claim_judge` recorded: the reviewer's label on the claim and
    their current judgment of each citation (in citation order), and the label
    the judgments proposed."""

    label: Label
    judgments: list[CitationJudgment]
    proposed: str


def judgment_explanation(judgments: list[tuple[str, str]]) -> str:
    """The justification written when a reviewer confirms the proposed label
    without typing one: each citation's id and judgment, e.g.
    ``"Citations judged: [P1] NONE, [P2] PARTIAL."``. ``judgments``: ``(cited_id, judgment)``."""
    return "Citations judged: " + ", ".join(f"[{cited}] {value}" for cited, value in judgments) + "."


def claim_judge(
    *, claim: Claim, reviewer: Reviewer, judgments: Mapping[int, str], evidence: Mapping[int, str] | None = None,
    partials_enough: bool = False, value: str | None = None, justification: str = "", base_revision: int,
    base_label_id: int | None,
) -> JudgedClaim:
    """Record ``reviewer``'s judgment of every citation of ``claim`` and the claim's label (SPEC §4.3b).

    ``judgments`` maps each citation id of the claim to FULL, PARTIAL, NONE or
    UNJUDGEABLE; ``evidence`` optionally maps citation ids to the passage words
    that carry the claim. ``partials_enough``: the reviewer judged the PARTIAL
    citations together to entail the claim. The proposed label is SUPPORTED
    when a citation is FULL (or PARTIALs are enough), else UNSUPPORTED.
    ``value`` ``None`` (or equal to the proposal) confirms it; another value
    overrules it and needs a ``justification``. A confirmed label without a
    typed justification records the judgments as its justification
    (:func:`judgment_explanation`), so an UNSUPPORTED label always says why.

    A judgment equal to the reviewer's current one (value and evidence) is
    kept; a changed one replaces it as current, the old one stays in history.
    The label goes through ``labeling.review.label_writes.label_save`` (revision and
    conflict checks, the SPEC §3 rule) in the same transaction.

    Raises ``ValidationError`` when a citation is left unjudged or is not the
    claim's, for an unknown judgment, FULL/PARTIAL on a fabricated citation
    (the passage was never sent), an overruled label without justification,
    an over-long evidence or justification, or a non-factual or uncited claim;
    ``LabelConflict`` (from ``label_save``) when the claim or label changed since
    ``base_revision`` / ``base_label_id``, or the claim was merged away.
    """
    evidence = dict(evidence or {})
    justification = (justification or "").strip()
    with transaction.atomic():
        locked = Claim.objects.select_for_update(of=("self",)).select_related("answer__run").filter(pk=claim.pk).first()
        if locked is None:  # merged away by someone else since the form was rendered
            raise LabelConflict(claim_gone(claim).messages[0], claim=claim, newer=None)
        run = locked.answer.run
        citations = list(Citation.objects.filter(claim=locked).order_by("position"))
        if not locked.factual:
            raise ValidationError(f"Claim {locked.index} is marked not factual: mark it factual (0) to judge it.",
                                  code="non_factual")
        if not citations:
            raise ValidationError(f"Claim {locked.index} cites nothing: it is UNCITED, there is nothing to judge.",
                                  code="uncited")
        by_id = {c.pk: c for c in citations}
        unknown = sorted(set(map(int, judgments)) - set(by_id))
        if unknown:
            raise ValidationError(f"Citation(s) {unknown} do not belong to claim {locked.index}.",
                                  code="unknown_citation")
        given: dict[int, str] = {}
        for citation in citations:
            raw = judgments.get(citation.pk, judgments.get(str(citation.pk)))  # type: ignore[call-overload]
            if raw in (None, ""):
                raise ValidationError(
                    f"Claim {locked.index}: judge citation [{citation.cited_id}] too (f FULL, p PARTIAL, x NONE, "
                    "c UNJUDGEABLE) before saving.", code="unjudged_citation")
            try:
                given[citation.pk] = check_judgment(raw)
            except ValueError:
                raise ValidationError(f"Citation [{citation.cited_id}]: unknown judgment {raw!r}; use one of "
                                      f"{', '.join(JUDGMENTS)}.", code="invalid_judgment") from None
            if citation.fabricated and given[citation.pk] in (FULL, PARTIAL):
                raise ValidationError(
                    f"Citation [{citation.cited_id}] is fabricated (its passage was not sent with the answer): "
                    "it can be NONE or UNJUDGEABLE, never FULL or PARTIAL.", code="judged_fabricated")
            words = (evidence.get(citation.pk, evidence.get(str(citation.pk), "")) or "").strip()  # type: ignore[call-overload]
            if len(words) > MAX_JUSTIFICATION_CHARS:
                raise ValidationError(f"The evidence for [{citation.cited_id}] is {len(words):,} characters long; "
                                      f"the limit is {MAX_JUSTIFICATION_CHARS:,}.", code="evidence_too_long")
            evidence[citation.pk] = words
        proposal = proposed_label([given[c.pk] for c in citations], partials_enough=partials_enough)
        value = value or proposal or ""
        if value != proposal and not justification:
            raise ValidationError(
                f"Claim {locked.index}: the judgments propose {proposal}; to label it {value} instead, say why "
                "in the justification.", code="overrule_needs_justification")
        if not justification:
            justification = judgment_explanation([(c.cited_id, given[c.pk]) for c in citations])
        label = label_save(claim=locked, reviewer=reviewer, value=value, justification=justification,
                           base_revision=base_revision, base_label_id=base_label_id)
        current = {j.citation_id: j for j in CitationJudgment.objects.select_for_update().filter(
            citation__in=citations, reviewer=reviewer, is_current=True)}
        saved = []
        changed = {}
        for citation in citations:
            old = current.get(citation.pk)
            if old is not None and old.judgment == given[citation.pk] and old.evidence == evidence[citation.pk]:
                saved.append(old)
                continue
            if old is not None:
                old.is_current = False
                old.save(update_fields=["is_current"])
            saved.append(CitationJudgment.objects.create(
                citation=citation, reviewer=reviewer, judgment=given[citation.pk], evidence=evidence[citation.pk],
                claim_revision=locked.revision, is_current=True, is_stale=False))
            changed[citation.cited_id] = given[citation.pk]
        if changed:
            labels_changed(run=run, claim=locked.pk)
            audit_record(action=AuditAction.JUDGE, actor=reviewer, run=run, target=claim_target(locked),
                         claim_id=locked.pk, detail={"judgments": changed, "proposed": proposal,
                                                     "label": label.value})
        return JudgedClaim(label=label, judgments=saved, proposed=proposal)


def claim_set_factual(*, claim: Claim, factual: bool, base_revision: int | None = None,
                      actor: Reviewer | None = None) -> Claim:
    """Mark ``claim`` factual or "not a factual claim" (SPEC §4.3b).

    A non-factual claim (a greeting, a hedge, the question restated) leaves
    every denominator — claims, cited, supported, judged citations — and the
    queue; its labels and judgments stay (marking it factual again brings
    them back). Setting the value it has changes nothing; a change is in the
    audit log as an ``edit`` by ``actor`` (None: the command line). Raises
    ``ValidationError`` (code ``conflict``) when ``base_revision`` (the revision
    the reviewer saw) is no longer current or the claim was merged away.
    """
    with transaction.atomic():
        locked = Claim.objects.select_for_update(of=("self",)).select_related("answer__run").filter(pk=claim.pk).first()
        if locked is None:  # merged away by someone else since the page was rendered
            raise claim_gone(claim)
        if base_revision is not None and base_revision != locked.revision:
            raise ValidationError(
                f"Claim {locked.index} was changed by someone else after you opened it: nothing was changed. "
                "Read it as it is now and try again.", code="conflict")
        if locked.factual != factual:
            locked.factual = factual
            locked.save(update_fields=["factual"])
            # The run's cited factual claims (progress) changed: see runs.claims_changed.
            claims_changed(run=locked.answer.run_id)
            audit_record(action=AuditAction.EDIT, actor=actor, run=locked.answer.run, target=claim_target(locked),
                         claim_id=locked.pk, detail={"factual": factual})
        return locked
