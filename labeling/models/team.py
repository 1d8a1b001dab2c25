"""Reviewer quality and sampling (SPEC §4.5, §4.6): guidelines, gold claims, send-backs and probability samples."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from labeling.models.labels import LabelValue
from scoring import labels


class Sample(models.Model):
    """The run's probability sample of answers for human labels (SPEC §4.6):
    ``members`` are the first answers of a permutation of the run's answers
    (``question_id`` order) seeded with ``seed``, in that order. Growing it takes
    the next answers of the same permutation: earlier members stay.
    ``target_half_width``: a lead's stopping point for the support estimate's
    interval (SPEC §4.6), null when none is set."""

    # One sample per run (a constraint, not a OneToOneField: the backup follows foreign keys).
    run = models.ForeignKey("labeling.Run", on_delete=models.CASCADE, related_name="samples")
    seed = models.PositiveBigIntegerField()
    target_half_width = models.FloatField(null=True, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["run"], name="one_sample_per_run"),
            models.CheckConstraint(condition=Q(target_half_width__gt=0, target_half_width__lt=0.5)
                                   | Q(target_half_width__isnull=True), name="sample_target_half_width_range"),
        ]

    def __str__(self) -> str:
        return f"sample of run {self.run_id} (seed {self.seed})"


class SampleMember(models.Model):
    """One answer of a run's sample, at 1-based ``position`` in sample order."""

    sample = models.ForeignKey("labeling.Sample", on_delete=models.CASCADE, related_name="members")
    answer = models.ForeignKey("labeling.Answer", on_delete=models.CASCADE, related_name="sample_memberships")
    position = models.PositiveIntegerField()

    class Meta:
        ordering = ["sample_id", "position"]
        constraints = [
            models.UniqueConstraint(fields=["sample", "position"], name="sample_position_unique"),
            models.UniqueConstraint(fields=["sample", "answer"], name="sample_answer_once"),
        ]

    def __str__(self) -> str:
        return f"answer {self.answer_id} at {self.position} of sample {self.sample_id}"


class Guidelines(models.Model):
    """One version of a project's labeling guidelines (SPEC §4.4): Markdown that the
    pages render with raw HTML off (``labeling.team.guidelines``). Every edit is a new
    version, numbered 1, 2, … per project; the latest is in force, and each label
    records the number it was made under (``Label.guidelines_version``)."""

    project = models.ForeignKey("labeling.Project", on_delete=models.CASCADE, related_name="guidelines")
    number = models.PositiveIntegerField()
    text = models.TextField()
    author = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                               related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["project_id", "number"]
        constraints = [
            models.UniqueConstraint(fields=["project", "number"], name="guidelines_number_unique_per_project"),
            models.CheckConstraint(condition=Q(number__gte=1), name="guidelines_number_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.project_id} guidelines v{self.number}"


class GoldSource(models.TextChoices):
    """Where a gold label came from (SPEC §4.4)."""

    ADJUDICATION = "adjudication", "the lead's adjudication"
    LABEL = "label", "a lead's own label"
    FILE = "file", "a gold file (import_gold)"


class GoldClaim(models.Model):
    """A hidden gold check: a lead's known-right label for ``claim`` with a reason
    (SPEC §4.4). The queue mixes gold claims into each assigned reviewer's work
    at ``Run.gold_rate`` (``labeling.review.queue``) and never shows them as gold; a
    reviewer's current label on one is scored against ``value``
    (``labeling.team.quality``). Kept like adjudications: ``is_current`` marks the one
    in force; unmarking, or a change of the claim (its labels go stale), ends it.
    ``run`` is the claim's run (the queue and the dashboard read a run's gold
    claims by it)."""

    run = models.ForeignKey("labeling.Run", on_delete=models.CASCADE, related_name="gold_claims")
    claim = models.ForeignKey("labeling.Claim", on_delete=models.CASCADE, related_name="gold")
    value = models.CharField(max_length=16, choices=LabelValue.choices)
    reason = models.TextField()
    source = models.CharField(max_length=16, choices=GoldSource.choices)
    lead = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                             related_name="+")
    claim_revision = models.PositiveIntegerField()
    is_current = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["claim_id", "-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["claim"], condition=Q(is_current=True), name="one_current_gold_per_claim"),
            models.CheckConstraint(condition=Q(value__in=[labels.SUPPORTED, labels.UNSUPPORTED]),
                                   name="gold_value_judged"),
            models.CheckConstraint(condition=Q(source__in=GoldSource.values), name="gold_source_known"),
        ]
        indexes = [models.Index(fields=["run", "is_current"], name="gold_run_current")]

    def __str__(self) -> str:
        return f"gold {self.value} on claim {self.claim_id}"


class Resolution(models.TextChoices):
    """How a send-back ended (SPEC §4.4)."""

    RELABEL = "relabel", "relabeled"
    REPLY = "reply", "replied"
    CLAIM_CHANGED = "claim_changed", "the claim changed"


class SendBack(models.Model):
    """A lead sends ``reviewer``'s label on ``claim`` back for rework with a comment
    (SPEC §4.4). While open (``resolved_at`` null) the claim comes first in that
    reviewer's queue with the comment shown; it is resolved when they relabel the
    claim (``label_writes.label_save``) or reply, or when the claim changes (its labels
    go stale). One open send-back per claim and reviewer."""

    run = models.ForeignKey("labeling.Run", on_delete=models.CASCADE, related_name="send_backs")
    claim = models.ForeignKey("labeling.Claim", on_delete=models.CASCADE, related_name="send_backs")
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="send_backs")
    label = models.ForeignKey("labeling.Label", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    lead = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                             related_name="+")
    comment = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)
    resolved_at = models.DateTimeField(null=True, blank=True)
    resolution = models.CharField(max_length=16, choices=Resolution.choices, blank=True)
    reply = models.TextField(blank=True)

    class Meta:
        ordering = ["run_id", "created_at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["claim", "reviewer"], condition=Q(resolved_at__isnull=True),
                                    name="one_open_send_back_per_claim_and_reviewer"),
            models.CheckConstraint(
                condition=Q(resolved_at__isnull=True, resolution="")
                | Q(resolved_at__isnull=False, resolution__in=Resolution.values),
                name="send_back_resolution_whole"),
        ]
        indexes = [models.Index(fields=["run", "reviewer", "resolved_at"], name="send_back_open")]

    def __str__(self) -> str:
        return f"claim {self.claim_id} sent back to {self.reviewer_id}"
