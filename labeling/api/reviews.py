"""Claims with their citations and labels, the labels of a project, and a
label written as the token's reviewer (``label_writes.label_save``: the review
page's rules and its 409 on a conflict)."""

from __future__ import annotations

from typing import Any

from django.db.models import Prefetch, Q, QuerySet
from django.http import HttpRequest
from ninja import Query, Router, Schema
from ninja.responses import Status
from pydantic import Field

from labeling import permissions
from labeling.api.access import access_of, claim_of, project_of, run_of, sees_all_labels
from labeling.api.pages import PageIn, page_of, paged
from labeling.api.schemas import ClaimOut, Error, ErrorList, LabelIn, LabelOut, label_out
from labeling.models import Citation, Claim, Label, Run
from labeling.names import normalize_name
from labeling.review import label_writes

router = Router(tags=["claims and labels"])


class ClaimFilter(Schema):
    question_id: str | None = Field(None, description="only the claims of this question's answer")
    reviewer: str | None = Field(None, description="show only this reviewer's labels")


def _claims(run: Run, *, reviewer_id: int, everyone: bool, only: str | None) -> QuerySet[Claim]:
    """The run's claims in answer order with their citations (and passages) and
    current labels: everyone's, or only ``reviewer_id``'s when ``everyone`` is
    false (a blind run), narrowed to reviewer ``only``. Three queries a page."""
    labels = Label.objects.filter(is_current=True).select_related("reviewer").order_by("reviewer__username")
    if not everyone:
        labels = labels.filter(reviewer_id=reviewer_id)
    if only:
        labels = labels.filter(reviewer__username=only)
    return (Claim.objects.filter(answer__run=run).select_related("answer")
            .prefetch_related(Prefetch("citations", queryset=Citation.objects.select_related("passage")),
                              Prefetch("labels", queryset=labels, to_attr="current_labels"))
            .order_by("answer__question_key", "index"))


def _claim_out(claim: Claim, reviewer_id: int) -> dict[str, Any]:
    return {
        "id": claim.pk, "answer_id": claim.answer_id, "question_id": claim.answer.question_key,
        "index": claim.index, "text": claim.text, "revision": claim.revision, "factual": claim.factual,
        "citations": [{"id": c.pk, "passage_id": c.cited_id, "source": c.passage.source if c.passage else "",
                       "span": c.span, "fabricated": c.fabricated,
                       "passage_text": c.passage.text if c.passage else None} for c in claim.citations.all()],
        "labels": [label_out(label) for label in claim.current_labels],
        "my_label": next((label.pk for label in claim.current_labels if label.reviewer_id == reviewer_id), None),
    }


@router.get("/projects/{slug}/runs/{run}/claims", response={200: page_of(ClaimOut), 403: Error, 404: Error},
            url_name="claim_list")
def claim_list(request: HttpRequest, slug: str, run: str, filters: Query[ClaimFilter],
               page: Query[PageIn]) -> dict[str, Any]:
    """The run's claims in answer order (by question id, then claim index), with their citations and current
    labels. On a blind run a reviewer's token sees its own labels only."""
    target = run_of(request, slug, run)
    access = access_of(request)
    only = normalize_name(filters.reviewer) if filters.reviewer else None
    claims = _claims(target, reviewer_id=access.reviewer.pk, everyone=sees_all_labels(target), only=only)
    if filters.question_id is not None:
        claims = claims.filter(answer__question_key=normalize_name(filters.question_id))
    # A blind reviewer's own labels are all they see: ``my_label`` stays right when ``only`` names someone else.
    return paged(claims, page, lambda claim: _claim_out(claim, access.reviewer.pk))


@router.get("/projects/{slug}/runs/{run}/claims/{int:claim_id}", response={200: ClaimOut, 404: Error},
            url_name="claim_detail")
def claim_detail(request: HttpRequest, slug: str, run: str, claim_id: int) -> dict[str, Any]:
    target = run_of(request, slug, run)
    access = access_of(request)
    claim = _claims(target, reviewer_id=access.reviewer.pk, everyone=sees_all_labels(target), only=None
                    ).filter(pk=claim_id).first()
    if claim is None:
        claim_of(target, claim_id)  # the 404 of the pages' claim views
    return _claim_out(claim, access.reviewer.pk)


@router.post("/projects/{slug}/runs/{run}/claims/{int:claim_id}/labels",
             response={200: LabelOut, 201: LabelOut, 403: Error, 404: Error, 409: Error, 422: ErrorList},
             url_name="label_create")
def label_create(request: HttpRequest, slug: str, run: str, claim_id: int, body: LabelIn) -> Status:
    """Label the claim as the token's reviewer (reviewer or lead; assigned to the run when it has
    assignments), by the review page's rules (SPEC §3). `revision` and `base_label` say what the label
    was written against: when the claim changed, or the reviewer's label on it changed, since, the answer
    is 409 with the reason (and `newer`, the label now current) and nothing is saved. Saving the current
    value and justification again returns the current label (200); a new label is 201."""
    target = run_of(request, slug, run, permissions.LABEL)
    claim = claim_of(target, claim_id)
    claim.answer.run = target
    label = label_writes.label_save(claim=claim, reviewer=access_of(request).reviewer, value=body.value,
                                justification=body.justification, base_revision=body.revision,
                                base_label_id=body.base_label)
    label.reviewer = access_of(request).reviewer
    return Status(200 if label.pk == body.base_label else 201, label_out(label))


class LabelFilter(Schema):
    run: str | None = Field(None, description="only this run's labels")
    reviewer: str | None = Field(None, description="only this reviewer's labels")
    history: bool = Field(False, description="also labels no longer current (replaced, undone or stale)")


@router.get("/projects/{slug}/labels", response={200: page_of(LabelOut), 404: Error}, url_name="label_list")
def label_list(request: HttpRequest, slug: str, filters: Query[LabelFilter], page: Query[PageIn]) -> dict[str, Any]:
    """The project's labels, oldest first, filtered by run and reviewer. A reviewer's token sees only its own
    labels on the blind runs."""
    access = access_of(request)
    project = project_of(request, slug)
    labels = Label.objects.filter(claim__answer__run__project=project).select_related("reviewer").order_by(
        "created_at", "id")
    if not filters.history:
        labels = labels.filter(is_current=True)
    if filters.run is not None:
        labels = labels.filter(claim__answer__run__name=normalize_name(filters.run))
    if filters.reviewer is not None:
        labels = labels.filter(reviewer__username=normalize_name(filters.reviewer))
    if permissions.labels_blind(access.role):
        # Blind runs (``Run.is_blind``): a reviewer sees nobody's labels there but their own.
        blind = (Q(claim__answer__run__blind=True)
                 | Q(claim__answer__run__blind__isnull=True, claim__answer__run__overlap__gt=1))
        labels = labels.exclude(blind & ~Q(reviewer=access.reviewer))
    return paged(labels, page, label_out)
