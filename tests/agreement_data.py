"""A second reviewer made from the ExpertQA experts' labels with a known number of flips,
for the agreement tests (command and page)."""

from __future__ import annotations

from labeling.models import Label, Reviewer, ReviewerKind, Run

EXPERT = "expertqa-annotator"
# post_hoc_gs_gpt4 (fixtures/README.md): 177 cited claims, 175 labeled by the experts,
# 133 SUPPORTED and 42 UNSUPPORTED; its 4 uncited claims are labeled UNCITED.
FLIP_RUN = "post_hoc_gs_gpt4"


def copy_with_flips(run: Run, *, name: str = "flipper", to_unsupported: int = 10, to_supported: int = 5) -> Reviewer:
    """A reviewer ``name`` (kind external) who gives every claim of ``run`` the expert's
    label, except the first ``to_unsupported`` SUPPORTED claims (by claim id), labeled
    UNSUPPORTED, and the first ``to_supported`` UNSUPPORTED ones, labeled SUPPORTED."""
    copy = Reviewer.objects.create(username=name, kind=ReviewerKind.EXTERNAL)
    expert = Label.objects.filter(claim__answer__run=run, is_current=True, reviewer__username=EXPERT)
    flips = {"SUPPORTED": to_unsupported, "UNSUPPORTED": to_supported}
    other = {"SUPPORTED": "UNSUPPORTED", "UNSUPPORTED": "SUPPORTED"}
    labels = []
    for label in expert.order_by("claim_id"):
        value, justification = label.value, label.justification
        if flips.get(value, 0) > 0:
            flips[value] -= 1
            value, justification = other[value], f"flipped from {label.value}"
        labels.append(Label(claim_id=label.claim_id, reviewer=copy, value=value, justification=justification,
                            claim_revision=label.claim_revision))
    Label.objects.bulk_create(labels)
    return copy
