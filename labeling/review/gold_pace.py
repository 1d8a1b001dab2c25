"""The pace of a reviewer's hidden gold checks (SPEC §4.4): when the next one is due
(``labeling.review.queue``'s module docstring gives the rule), and the pace once the
claim on screen carries the reviewer's label (the page's look ahead)."""

from __future__ import annotations

import hashlib

from labeling.models import Citation, Claim, GoldClaim, Label, Reviewer


def gold_offset(run_id: int, reviewer_id: int, k: int) -> float:
    """``uₖ``: a number in [0, 1) fixed by (run, reviewer, k),
    where in its stretch of ``1 / rate`` labels the reviewer's gold check k comes (the rule:
    ``labeling.review.queue``'s module docstring)."""
    digest = hashlib.sha256(f"gold:{run_id}:{reviewer_id}:{k}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2 ** 64


def gold_due(*, rate: float, labeled: int, gold_labeled: int, offset: float) -> bool:
    """Whether the next claim handed to a reviewer who has ``labeled`` claims of the run,
    ``gold_labeled`` of them gold, is a gold check at ``rate`` (``labeling.review.queue``):
    ``gold_labeled + offset < rate · (labeled + 1)``. At rate 0.5 with offsets 0.3
    and 0.7: check 0 comes first (0.3 < 0.5), check 1 fourth ((1 + 0.7) < 0.5 · 4)."""
    return rate > 0 and gold_labeled + offset < rate * (labeled + 1)


def after_labeling(reviewer: Reviewer, claim: Claim, labeled: int, gold_labeled: int,
                   gold_open: int) -> tuple[int, int, int]:
    """The gold pace (labels, gold labels, gold claims awaiting the reviewer) once
    ``claim`` carries the reviewer's label: one more label when it is their first on a
    cited factual claim, and when that claim is gold, one more gold label (and one
    fewer open check unless it is their own gold). Up to three small queries."""
    if not claim.factual or Label.objects.filter(claim=claim, reviewer=reviewer, is_current=True).exists() \
            or not Citation.objects.filter(claim=claim).exists():
        return labeled, gold_labeled, gold_open
    leads = list(GoldClaim.objects.filter(claim=claim, is_current=True).values_list("lead_id", flat=True)[:1])
    if not leads:
        return labeled + 1, gold_labeled, gold_open
    return labeled + 1, gold_labeled + 1, gold_open - (0 if leads[0] == reviewer.pk else 1)
