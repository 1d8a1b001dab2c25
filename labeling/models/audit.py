"""The audit trail: who changed what, written in the transaction of the change."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone


class AuditAction(models.TextChoices):
    """What an audit event records someone did (SPEC §7: who labeled, edited,
    split, merged, adjudicated, snapshotted, imported, exported what and when)."""

    LABEL = "label", "labeled"
    JUDGE = "judge", "judged citations"
    UNDO = "undo", "undid a label"
    EDIT = "edit", "edited a claim"
    SPLIT = "split", "split a claim"
    MERGE = "merge", "merged claims"
    ADJUDICATE = "adjudicate", "adjudicated"
    SNAPSHOT = "snapshot", "saved a version"
    IMPORT_ANSWERS = "import_answers", "imported answers"
    IMPORT_LABELS = "import_labels", "imported labels"
    EXPORT = "export", "exported"
    RENAME = "rename", "renamed the run"
    DELETE = "delete", "deleted the run"
    CREATE = "create", "created the run"
    SAMPLE = "sample", "drew a sample"
    GOLD = "gold", "marked gold claims"
    SEND_BACK = "send_back", "sent a label back"
    REWORK = "rework", "answered a send-back"


class AuditEvent(models.Model):
    """One thing someone did to a run, recorded by the service (or view) that
    did it, in the same transaction (``labeling.audit``); never changed after.

    The log outlives what it names: ``actor_name`` and ``run_name`` are the
    names at the time (a deleted run's events keep its name, ``run`` null), and
    ``claim_id`` is a plain id, as a merge deletes claims. ``actor`` is null
    for the command line. ``detail`` is free metadata for the reader (the label
    value and the one it replaced, counts, file names): never scored.
    """

    at = models.DateTimeField(default=timezone.now, editable=False)
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                              related_name="+")
    actor_name = models.CharField(max_length=150, blank=True)
    action = models.CharField(max_length=16, choices=AuditAction.choices)
    project = models.ForeignKey("labeling.Project", on_delete=models.CASCADE, related_name="audit_events")
    run = models.ForeignKey("labeling.Run", null=True, blank=True, on_delete=models.SET_NULL,
                            related_name="audit_events")
    run_name = models.CharField(max_length=200)
    claim_id = models.PositiveBigIntegerField(null=True, blank=True)
    target = models.CharField(max_length=300, blank=True)
    detail = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-at", "-id"]
        constraints = [
            models.CheckConstraint(condition=Q(action__in=AuditAction.values), name="audit_action_known"),
        ]
        indexes = [
            models.Index(fields=["run", "-at", "-id"], name="audit_run_time"),
            models.Index(fields=["project", "run_name", "-at"], name="audit_project_run_name"),
        ]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M:%S} {self.actor_name or 'command line'} {self.action} {self.target}"
