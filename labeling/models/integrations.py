"""Outside systems: API tokens, webhooks and their deliveries, single sign-on identities."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from labeling.models.content import Role


class ApiToken(models.Model):
    """A project token (SPEC §6): ``Authorization: Bearer <token>`` on the HTTP
    API acts as ``reviewer`` in ``project`` with ``role`` at most (never more
    than the reviewer's membership role at the time of the request).

    The token itself is shown once, when it is made, and never stored: only
    its SHA-256 (``digest``, hex) and its first characters (``prefix``, to
    tell tokens apart in a list). A token carries 256 random bits, so a fast
    hash is enough (there is nothing to brute-force). It stops working at
    ``expires_at`` or when revoked; ``last_used_at`` is refreshed at most once
    a minute. ``name`` labels every audit event of the writes made with it.
    """

    project = models.ForeignKey("labeling.Project", on_delete=models.CASCADE, related_name="api_tokens")
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100)
    role = models.CharField(max_length=16, choices=Role.choices)
    prefix = models.CharField(max_length=16)
    digest = models.CharField(max_length=64, unique=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    revoked_at = models.DateTimeField(null=True, blank=True)
    revoked_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["project_id", "-created_at", "-id"]
        constraints = [
            # A revoked token keeps its name in the audit log; a new token may take it.
            models.UniqueConstraint(fields=["project", "name"], condition=Q(revoked_at__isnull=True),
                                    name="token_name_unique_while_active"),
            models.CheckConstraint(condition=Q(role__in=Role.values), name="token_role_known"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"


class WebhookEvent(models.TextChoices):
    """What a webhook can be told about (SPEC §6)."""

    LABEL_SAVED = "label.saved", "a label was saved"
    CLAIM_ADJUDICATED = "claim.adjudicated", "a lead adjudicated a claim"
    RUN_FULLY_LABELED = "run.fully_labeled", "every cited claim of a run has its label"
    VERSION_SAVED = "version.saved", "a label table version was saved"
    JUDGE_RUN_FINISHED = "judge_run.finished", "a judge run finished"
    GATE_FAILED = "gate.failed", "a CI gate failed"


class Webhook(models.Model):
    """A URL of a project told about ``events`` (a list of ``WebhookEvent``
    values: configuration, never scored), each delivery signed with
    ``secret`` (HMAC-SHA256; kept in clear: it is needed to sign)."""

    project = models.ForeignKey("labeling.Project", on_delete=models.CASCADE, related_name="webhooks")
    url = models.URLField(max_length=2000)
    events = models.JSONField(default=list)
    secret = models.CharField(max_length=100)
    active = models.BooleanField(default=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["project_id", "created_at", "id"]

    def __str__(self) -> str:
        return self.url


class DeliveryStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    DELIVERED = "delivered", "Delivered"
    FAILED = "failed", "Failed"
    REFUSED = "refused", "Refused (not allowed)"


class WebhookDelivery(models.Model):
    """One event sent (or to be sent) to one webhook: the body as sent, and its
    log: ``attempts`` made, the last HTTP ``response_status`` or ``error``."""

    webhook = models.ForeignKey("labeling.Webhook", on_delete=models.CASCADE, related_name="deliveries")
    event = models.CharField(max_length=32)
    payload = models.JSONField(default=dict)
    status = models.CharField(max_length=16, choices=DeliveryStatus.choices, default=DeliveryStatus.QUEUED)
    attempts = models.PositiveSmallIntegerField(default=0)
    response_status = models.PositiveSmallIntegerField(null=True, blank=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_attempt_at = models.DateTimeField(null=True, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["webhook_id", "-created_at", "-id"]
        constraints = [
            models.CheckConstraint(condition=Q(status__in=DeliveryStatus.values), name="delivery_status_known"),
        ]

    def __str__(self) -> str:
        return f"{self.event} to {self.webhook_id} ({self.status})"


class SsoIdentity(models.Model):
    """The account at the single sign-on provider of a reviewer it created
    (``labeling.integrations.sso``): ``subject`` is ``"<issuer>|<sub>"``, what later logins
    find the reviewer by (never their name or e-mail)."""

    reviewer = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="sso_identity")
    subject = models.CharField(max_length=300, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = "single sign-on identity"
        verbose_name_plural = "single sign-on identities"

    def __str__(self) -> str:
        return self.subject
