"""Reads of a run's reviewers: who works on it and how far each one got (SPEC §4.4).

A reviewer works on a run when assigned to it, or when nobody is and they
may label (lead or reviewer of the project). Each cited claim needs the run's
``overlap`` current human labels; a claim that has them has *reached its
overlap* and leaves every queue (``labeling.review.queue``).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count, Exists, OuterRef, Q

from labeling.models import Assignment, Citation, Claim, Label, Membership, Reviewer, ReviewerKind, Run
from labeling.permissions import LABEL, may
from labeling.review.queue import human_label_count, works_on
from scoring.ratio import Ratio


@dataclass(frozen=True)
class ReviewerProgress:
    """One reviewer on a run: ``labeled`` cited factual claims carry their current label;
    ``assigned`` = labeled + the open claims still waiting for them (0 for a
    reviewer who does not work on the run: only what they labeled)."""

    reviewer: Reviewer
    works_on: bool
    labeled: int
    assigned: int

    @property
    def progress(self) -> Ratio:
        return Ratio(self.labeled, self.assigned)


@dataclass(frozen=True)
class RunReviewers:
    """``cited`` factual claims of the run, ``reached`` of them with ``overlap`` human
    labels, whether anyone is ``assigned``, and one row per reviewer."""

    overlap: int
    blind: bool
    cited: int
    reached: int
    assigned: bool
    rows: list[ReviewerProgress]

    @property
    def reached_ratio(self) -> Ratio:
        return Ratio(self.reached, self.cited)


def run_reviewers(*, run: Run) -> RunReviewers:
    """Progress per reviewer on ``run`` and how many claims reached their overlap.

    Three queries whatever the size of the run: the cited claims with their
    human label counts (aggregated), the current human labels per reviewer
    (split by whether their claim is still open), and the project's members
    with whether each is assigned (one more when someone who labeled is no
    longer a member). Rows: the assigned reviewers (or, with
    nobody assigned, the leads and reviewers), then anyone else who labeled,
    by name.
    """
    # Cited factual claims, the denominator of every reviewer's progress (SPEC §4.3b: a claim
    # marked not factual leaves every count, its labels included), as tallies.run_progress.
    cited = (Claim.objects.filter(answer__run=run, factual=True)
             .filter(Exists(Citation.objects.filter(claim=OuterRef("pk")))))
    totals = cited.alias(n_human=human_label_count()).aggregate(
        cited=Count("id"), reached=Count("id", filter=Q(n_human__gte=run.overlap)))
    per_reviewer = {
        row["reviewer_id"]: row
        for row in Label.objects.filter(claim__in=cited.values("pk"), is_current=True,
                                        reviewer__kind=ReviewerKind.HUMAN)
        .alias(n_human=human_label_count("claim")).values("reviewer_id").order_by()
        .annotate(labeled=Count("id"), open_labeled=Count("id", filter=Q(n_human__lt=run.overlap)))
    }
    members = list(Membership.objects.filter(project_id=run.project_id).select_related("reviewer")
                   .annotate(assigned=Exists(Assignment.objects.filter(run=run, reviewer=OuterRef("reviewer"))),
                             works=works_on(run, OuterRef("reviewer"))))
    anyone_assigned = any(m.assigned for m in members)
    # Who works on the run is the queue's rule (queue.works_on); with nobody assigned, the
    # members who may label.
    working = {m.reviewer_id for m in members if m.works and (m.assigned or may(m.role, LABEL))}
    people = {m.reviewer_id: m.reviewer for m in members}
    missing = set(per_reviewer) - set(people)
    if missing:
        # Someone labeled who is no longer a member: their labels still count, so they are listed.
        people.update({r.pk: r for r in Reviewer.objects.filter(pk__in=missing)})
    open_claims = totals["cited"] - totals["reached"]
    rows = []
    for pk in sorted(working | set(per_reviewer), key=lambda pk: (pk not in working, people[pk].username)):
        row = per_reviewer.get(pk, {"labeled": 0, "open_labeled": 0})
        waiting = open_claims - row["open_labeled"] if pk in working else 0
        rows.append(ReviewerProgress(reviewer=people[pk], works_on=pk in working, labeled=row["labeled"],
                                     assigned=row["labeled"] + waiting))
    return RunReviewers(overlap=run.overlap, blind=run.is_blind, cited=totals["cited"], reached=totals["reached"],
                        assigned=anyone_assigned, rows=rows)
