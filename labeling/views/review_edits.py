"""Split, merge and edit a claim from the review page (keys ``s``, ``m``, ``t``).

Each answers like a label save (``labeling.views.review``): with htmx the claim
panel and the answer's text and claim list out of band, a 409 with the reason
when the claim changed since the page was rendered; without JavaScript a
redirect with the notice as a message.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.http import HttpResponse

from labeling.models import Claim, Run
from labeling.review import claim_edits, screen
from labeling.review.highlight import suggest_split
from labeling.views.htmx import HtmxHttpRequest
from labeling.views.params import IdField, int_param
from labeling.views.review import after_write, claim_write_view, conflicted, show_review


class SplitForm(forms.Form):
    at = IdField(required=False)
    first = forms.CharField(required=False, max_length=10_000)
    second = forms.CharField(required=False, max_length=10_000)
    revision = IdField()


class MergeForm(forms.Form):
    other = IdField()
    revision = IdField()


class EditForm(forms.Form):
    text = forms.CharField(required=False, max_length=10_000)
    revision = IdField()



def _ids(values: list[str]) -> list[int]:
    return [number for number in map(int_param, values) if number is not None]


def _citation_choices(claim: Claim) -> list[dict[str, Any]]:
    return [{"id": c.pk, "label": c.cited_id, "fabricated": c.fabricated} for c in claim.citations.order_by("position")]


@claim_write_view("GET", "POST")
def claim_split(request: HtmxHttpRequest, run: Run, claim: Claim) -> HttpResponse:
    answer = claim.answer
    choices = _citation_choices(claim)
    if request.method == "GET":
        first, second = suggest_split(claim.text)
        every = [c["id"] for c in choices]
        return show_review(request, run, answer, claim.pk, came_from=answer.pk, mode="split",
                           split={"first": first, "second": second, "at": "", "choices": choices,
                                  "first_ids": every, "second_ids": every})
    form = SplitForm(request.POST)
    first_ids = _ids(request.POST.getlist("first_citations"))
    second_ids = _ids(request.POST.getlist("second_citations"))
    split = {"first": request.POST.get("first", ""), "second": request.POST.get("second", ""),
             "at": request.POST.get("at", ""), "choices": choices, "first_ids": first_ids,
             "second_ids": second_ids}
    if not form.is_valid():
        return show_review(request, run, answer, claim.pk, came_from=answer.pk, mode="split", split=split,
                           error="Give the text of each part, or a character offset to split at.")
    data = form.cleaned_data
    try:
        first, second = claim_edits.claim_split(
            claim=claim, at=data["at"], first_text=data["first"], second_text=data["second"],
            first_citation_ids=first_ids, second_citation_ids=second_ids, base_revision=data["revision"],
            actor=request.user,
        )
    except ValidationError as exc:
        return conflicted(show_review(request, run, answer, claim.pk, came_from=answer.pk, mode="split", split=split,
                                      error=exc.messages[0]), exc)
    notice = f"Split claim {first.index} into claims {first.index} and {second.index}: label each part."
    unplaced = [str(part.index) for part in (first, second) if part.start is None]
    if unplaced:
        notice += (f" Claim {' and '.join(unplaced)} is not word for word in the answer, so the answer text "
                   "no longer marks it (the claim list says “not in text”).")
    return after_write(request, run, first, show=first, notice=notice)


@claim_write_view("POST")
def claim_merge(request: HtmxHttpRequest, run: Run, claim: Claim) -> HttpResponse:
    form = MergeForm(request.POST)
    try:
        if not form.is_valid():
            raise ValidationError("The merge form came back incomplete (it names the neighbouring claim and the "
                                  "revision you saw): nothing was merged. Reload and try again.")
        other = screen.claim_in_run(run=run, claim_id=form.cleaned_data["other"])
        if other is None:
            raise ValidationError("Choose the neighbouring claim to merge with.")
        merged = claim_edits.claim_merge(claim=claim, other=other, base_revision=form.cleaned_data["revision"],
                                      actor=request.user)
    except ValidationError as exc:
        return conflicted(show_review(request, run, claim.answer, claim.pk, came_from=claim.answer_id,
                                      error=exc.messages[0]), exc)
    notice = f"Merged into claim {merged.index}: label it again (the old labels are kept as stale)."
    return after_write(request, run, merged, show=merged, notice=notice)


@claim_write_view("GET", "POST")
def claim_edit(request: HtmxHttpRequest, run: Run, claim: Claim) -> HttpResponse:
    answer = claim.answer
    if request.method == "GET":
        return show_review(request, run, answer, claim.pk, came_from=answer.pk, mode="edit", edit_text=claim.text)
    form = EditForm(request.POST)
    text = request.POST.get("text", "")
    if not form.is_valid():
        return show_review(request, run, answer, claim.pk, came_from=answer.pk, mode="edit", edit_text=text,
                           error="The edit form came back incomplete: nothing was changed. Reload and try again.")
    try:
        edited = claim_edits.claim_edit(claim=claim, text=form.cleaned_data["text"],
                                     base_revision=form.cleaned_data["revision"], actor=request.user)
    except ValidationError as exc:
        return conflicted(show_review(request, run, answer, claim.pk, came_from=answer.pk, mode="edit", edit_text=text,
                                      error=exc.messages[0]), exc)
    if edited.revision == claim.revision:
        notice = f"Claim {edited.index} is unchanged."
    else:
        notice = f"Claim {edited.index} reworded: label it again (the old labels are kept as stale)."
        if edited.start is None:
            notice += (" It is no longer word for word in the answer, so the answer text no longer marks it "
                       "(the claim list says “not in text”).")
    return after_write(request, run, edited, show=edited, notice=notice)
