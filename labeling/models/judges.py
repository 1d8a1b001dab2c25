"""Runs of an automated labeler (an LLM judge) over a run's claims."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import F, Q


class JudgeRunStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"


class JudgeSource(models.TextChoices):
    ENDPOINT = "endpoint", "OpenAI-compatible endpoint"
    IMPORT = "import", "Imported verdicts"


class JudgeRun(models.Model):
    """One pass of an automated labeler (a reviewer of kind ``model``) over a
    run: what it was (model, prompt and its SHA-256, temperature, endpoint, or
    the imported file) so two passes can be compared, and what it did.

    The counts are the pass's own record, written by the job as it goes (a
    job log, not a figure derived from labels): ``answers_total`` answers to
    judge, ``answers_done`` judged, ``answers_failed`` whose request or reply
    failed (nothing written for them); per claim ``claims_labeled``,
    ``claims_missing`` (no verdict for its id), ``claims_duplicated`` (two
    verdicts for its id), ``claims_malformed`` (a verdict that is not a
    valid label) and ``claims_changed`` (edited while the judge read it);
    ``verdicts_unknown`` counts verdicts for ids that were not asked about.
    """

    run = models.ForeignKey("labeling.Run", on_delete=models.CASCADE, related_name="judge_runs")
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="judge_runs")
    started_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    source = models.CharField(max_length=16, choices=JudgeSource.choices, default=JudgeSource.ENDPOINT)
    model = models.CharField(max_length=200, blank=True)
    base_url = models.CharField(max_length=1000, blank=True)
    prompt = models.TextField(blank=True)
    prompt_sha256 = models.CharField(max_length=64, blank=True)
    temperature = models.FloatField(null=True, blank=True)
    answer_limit = models.PositiveIntegerField(null=True, blank=True)
    relabel = models.BooleanField(default=False)
    # Free description of an import (file name, format, threshold): never scored.
    details = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=16, choices=JudgeRunStatus.choices, default=JudgeRunStatus.QUEUED)
    error = models.TextField(blank=True)
    answers_total = models.PositiveIntegerField(default=0)
    answers_done = models.PositiveIntegerField(default=0)
    answers_failed = models.PositiveIntegerField(default=0)
    claims_labeled = models.PositiveIntegerField(default=0)
    claims_missing = models.PositiveIntegerField(default=0)
    claims_duplicated = models.PositiveIntegerField(default=0)
    claims_malformed = models.PositiveIntegerField(default=0)
    claims_changed = models.PositiveIntegerField(default=0)
    verdicts_unknown = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["run_id", "created_at", "id"]
        constraints = [
            models.CheckConstraint(condition=Q(status__in=JudgeRunStatus.values), name="judge_run_status_known"),
            models.CheckConstraint(condition=Q(answers_done__lte=F("answers_total") - F("answers_failed")),
                                   name="judge_run_processed_within_total"),
        ]

    def __str__(self) -> str:
        return f"{self.reviewer_id} on run {self.run_id} ({self.status})"

    @property
    def finished(self) -> bool:
        return self.status in (JudgeRunStatus.DONE, JudgeRunStatus.FAILED)

    @property
    def answers_processed(self) -> int:
        """Answers judged or failed: the progress bar's value."""
        return self.answers_done + self.answers_failed
