"""Labels and what is decided about them (SPEC §2, §3): labels, leases, citation
judgments, adjudications, assignments and label table versions."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from scoring import judgments, labels


class Assignment(models.Model):
    """``reviewer`` works on ``run`` (their queue holds its claims)."""

    run = models.ForeignKey("labeling.Run", on_delete=models.CASCADE, related_name="assignments")
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="assignments")

    class Meta:
        ordering = ["run_id", "reviewer_id"]
        constraints = [
            models.UniqueConstraint(fields=["run", "reviewer"], name="one_assignment_per_reviewer"),
        ]

    def __str__(self) -> str:
        return f"{self.reviewer_id} on run {self.run_id}"


class LabelValue(models.TextChoices):
    """The label values of SPEC §3, as ``scoring.labels`` (their one home) spells them."""

    SUPPORTED = labels.SUPPORTED
    UNSUPPORTED = labels.UNSUPPORTED
    UNCITED = labels.UNCITED


class Label(models.Model):
    """One reviewer's verdict on one claim, with a justification (SPEC §2, §3).

    Every label is kept as history. ``is_current`` marks the one current label
    per (claim, reviewer); a label given on an older claim revision is stale
    (``is_stale``) and no longer current, so the claim is back in the queue.
    """

    claim = models.ForeignKey("labeling.Claim", on_delete=models.CASCADE, related_name="labels")
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="labels")
    value = models.CharField(max_length=16, choices=LabelValue.choices)
    justification = models.TextField(blank=True)
    claim_revision = models.PositiveIntegerField()
    is_current = models.BooleanField(default=True)
    is_stale = models.BooleanField(default=False)
    # The reviewer's label this one replaced as current: what undo brings back.
    supersedes = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    # The judge run that gave this label (a reviewer of kind ``model``): two runs of
    # one judge are compared through it (self-agreement, SPEC §4.4).
    judge_run = models.ForeignKey("JudgeRun", null=True, blank=True, on_delete=models.SET_NULL, related_name="labels")
    # The number of the project's guidelines version in force when the label was saved
    # (``Guidelines``; null: the project had none, or the label came from a file).
    guidelines_version = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["claim_id", "-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["claim", "reviewer"], condition=Q(is_current=True), name="one_current_label_per_reviewer"
            ),
            models.CheckConstraint(condition=~Q(is_current=True, is_stale=True), name="stale_label_not_current"),
        ]
        indexes = [
            models.Index(fields=["reviewer", "is_current"], name="label_reviewer_current"),
        ]

    def __str__(self) -> str:
        return f"{self.value} by {self.reviewer_id} on claim {self.claim_id}"


class ClaimLease(models.Model):
    """A short reservation of one claim for one reviewer in a run (SPEC §7).

    The queue (``labeling.review.queue``) takes it when it hands ``claim`` to
    ``reviewer``, so reviewers working at once get different claims: a claim
    counts toward its run's ``overlap`` with its current human labels plus the
    unexpired leases of other reviewers. One lease per reviewer and run (the
    unique constraint): handing the reviewer another claim moves it there,
    which releases the last one (a skip); their label on the claim releases
    it (``label_writes.label_save``); else it ends at ``expires_at``
    (``settings.CITELAB_LEASE_SECONDS`` after it was taken). Expired rows
    are left to be overwritten: at most one per reviewer and run.
    """

    run = models.ForeignKey("labeling.Run", on_delete=models.CASCADE, related_name="+")
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    claim = models.ForeignKey("labeling.Claim", on_delete=models.CASCADE, related_name="leases")
    expires_at = models.DateTimeField()

    class Meta:
        ordering = ["run_id", "reviewer_id"]
        constraints = [
            models.UniqueConstraint(fields=["run", "reviewer"], name="one_lease_per_reviewer_and_run"),
        ]

    def __str__(self) -> str:
        return f"claim {self.claim_id} for {self.reviewer_id} until {self.expires_at:%H:%M:%S}"


class Judgment(models.TextChoices):
    """How far one cited passage carries its claim (SPEC §4.3b; Liu, Zhang & Liang 2023), as
    ``scoring.judgments`` (their one home) spells them."""

    FULL = judgments.FULL, "FULL: this passage alone entails the claim"
    PARTIAL = judgments.PARTIAL, "PARTIAL: it carries part of the claim"
    NONE = judgments.NONE, "NONE: it does not support the claim"
    UNJUDGEABLE = judgments.UNJUDGEABLE, "UNJUDGEABLE: passage inaccessible or claim unclear"


class CitationJudgment(models.Model):
    """One reviewer's judgment of one citation of a claim, with optional evidence (SPEC §4.3b).

    Kept like labels: every judgment stays as history; ``is_current`` marks the
    one current judgment per (citation, reviewer); one given on an older claim
    revision is stale (``is_stale``) and no longer current. ``evidence`` holds
    the passage words that carry the claim (may be blank).
    """

    citation = models.ForeignKey("labeling.Citation", on_delete=models.CASCADE, related_name="judgments")
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="judgments")
    judgment = models.CharField(max_length=16, choices=Judgment.choices)
    evidence = models.TextField(blank=True)
    claim_revision = models.PositiveIntegerField()
    is_current = models.BooleanField(default=True)
    is_stale = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["citation_id", "-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["citation", "reviewer"], condition=Q(is_current=True),
                                    name="one_current_judgment_per_reviewer"),
            models.CheckConstraint(condition=~Q(is_current=True, is_stale=True), name="stale_judgment_not_current"),
            models.CheckConstraint(condition=Q(judgment__in=judgments.JUDGMENTS), name="judgment_value_known"),
        ]

    def __str__(self) -> str:
        return f"{self.judgment} by {self.reviewer_id} on citation {self.citation_id}"


class Adjudication(models.Model):
    """A lead's final label for a claim its reviewers disagree on, with a reason (SPEC §4.4).

    It is the label that counts for the claim, whatever the reviewers say. Like
    labels it is kept as history: ``is_current`` marks the one in force; a claim
    edit (split, merge, reword) ends it, as it makes the labels stale.
    """

    claim = models.ForeignKey("labeling.Claim", on_delete=models.CASCADE, related_name="adjudications")
    lead = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="adjudications")
    value = models.CharField(max_length=16, choices=LabelValue.choices)
    reason = models.TextField()
    claim_revision = models.PositiveIntegerField()
    is_current = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["claim_id", "-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["claim"], condition=Q(is_current=True),
                                    name="one_current_adjudication_per_claim"),
            models.CheckConstraint(condition=Q(value__in=[labels.SUPPORTED, labels.UNSUPPORTED]),
                                   name="adjudication_value_judged"),
        ]

    def __str__(self) -> str:
        return f"{self.value} adjudicated by {self.lead_id} on claim {self.claim_id}"


class LabelTableVersion(models.Model):
    """An immutable, content-hashed snapshot of a run's label table (SPEC §2).

    ``sha256`` is the hash of the canonical serialization stored in ``file``;
    reading the file back verifies it. Versions are numbered 1, 2, … per run.
    """

    run = models.ForeignKey("labeling.Run", on_delete=models.PROTECT, related_name="versions")
    number = models.PositiveIntegerField()
    author = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT,
                               related_name="label_table_versions")
    note = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    row_count = models.PositiveIntegerField()
    label_count = models.PositiveIntegerField()
    sha256 = models.CharField(max_length=64)
    # label_tables/<project slug, ≤ 64>/run-<id>/v<n>-<hash>.jsonl: 100 (the default) is too short.
    file = models.FileField(upload_to="label_tables/", max_length=255)

    class Meta:
        ordering = ["run_id", "number"]
        constraints = [
            models.UniqueConstraint(fields=["run", "number"], name="version_number_unique_per_run"),
            models.CheckConstraint(condition=Q(number__gte=1), name="version_number_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.run} v{self.number}"
