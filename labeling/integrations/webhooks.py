"""Webhooks (SPEC §6): a lead registers a URL of a project for events;
each event becomes a signed delivery, queued on the task queue, retried with
backoff, and logged.

Events. ``label.saved``, ``claim.adjudicated``, ``version.saved`` and
``judge_run.finished`` come from the audit log: :func:`audit_recorded` is
called by ``labeling.audit.audit_record`` for every event it records, and
looks the project's hooks up once the change has committed (a rolled-back
change sends nothing). ``run.fully_labeled`` is checked, off the request, after
a label or adjudication (the run's cited claims all carry the label that
counts; once per state of the run's claims). ``gate.failed`` is sent by the
API's gate. ``webhook.test`` is the page's test delivery.

Deliveries. ``POST`` of the JSON body ``{"id", "event", "created_at",
"project", "run", "data"}`` with headers ``X-Citelab-Event``,
``X-Citelab-Delivery`` (the delivery id: receivers drop a repeat),
``X-Citelab-Timestamp`` (Unix seconds) and ``X-Citelab-Signature:
sha256=<hex>``, the HMAC-SHA256 with the hook's secret of
``"<timestamp>.<body>"``: a receiver recomputes it and refuses a timestamp
more than five minutes old (a replay). A 2xx answer delivers; anything else
(or no answer in 10 s) is retried after 30 s, 1, 2, 4 and 8 minutes
(``CITELAB_WEBHOOK_RETRY_SECONDS`` × 2ⁿ), six attempts in all, then the
delivery is ``failed``. Redirects are not followed.

Destinations. Only to addresses ``CITELAB_WEBHOOK_ALLOW`` allows (see
:func:`destination_problem`): by default public addresses only, never the
server's own networks (loopback, private, link-local, shared, reserved). The
host is resolved at each attempt and the connection made to the address
that was checked, so a name cannot be re-pointed between the check and the
request. A refused destination is logged as ``refused``, never contacted.
"""

from __future__ import annotations

import hashlib
import hmac
import http.client
import ipaddress
import json
import logging
import secrets
import socket
import ssl
import time
from datetime import UTC, timedelta
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.validators import URLValidator
from django.db import transaction
from django.dispatch import receiver
from django.utils import timezone

from labeling.audit import event_recorded, event_row
from labeling.models import (
    AuditAction,
    AuditEvent,
    DeliveryStatus,
    Project,
    Reviewer,
    Run,
    Webhook,
    WebhookDelivery,
    WebhookEvent,
)
from labeling.permissions import LEAD, may, member_role, reader_of_everything

logger = logging.getLogger(__name__)

TEST_EVENT = "webhook.test"
MAX_ATTEMPTS = 6
TIMEOUT_SECONDS = 10
# A receiver's answer is read up to this much, for the log.
_READ_LIMIT = 2_000
_USER_AGENT = "Citelab-Webhook/1"


# -- destinations ---------------------------------------------------------------------------------------

def _allow_entries() -> tuple[set[str], list[ipaddress._BaseNetwork], bool]:
    """``CITELAB_WEBHOOK_ALLOW`` as (host names, networks, public allowed)."""
    names, networks, public = set(), [], False
    for entry in settings.CITELAB_WEBHOOK_ALLOW:
        entry = entry.strip().lower()
        if entry == "public":
            public = True
            continue
        try:
            networks.append(ipaddress.ip_network(entry, strict=False))
        except ValueError:
            names.add(entry)
    return names, networks, public


def _name_listed(host: str, names: set[str]) -> bool:
    return host in names or any(name.startswith("*.") and host.endswith(name[1:]) for name in names)


def destination_problem(url: str) -> tuple[str, str | None]:
    """Why ``url`` may not be sent to (``""``: it may), and the address to connect to.

    ``CITELAB_WEBHOOK_ALLOW`` lists what is allowed: ``public`` (the default:
    any address that is globally routable), IP networks (``10.0.0.0/8``,
    ``127.0.0.1``) and host names (``hooks.example.org``, ``*.example.org``).
    A URL is allowed when its host is a listed name, or when every address
    its host resolves to is in a listed network or, with ``public``, global.
    Only ``http`` and ``https`` URLs, without user or password.
    """
    try:
        URLValidator(schemes=["http", "https"])(url)
    except ValidationError:
        return "not an http(s) URL", None
    parts = urlsplit(url)
    if parts.username or parts.password:
        return "a URL with a user or password", None
    host = (parts.hostname or "").lower()
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        return f"{host} does not resolve ({exc})", None
    addresses = list(dict.fromkeys(info[4][0] for info in infos))
    names, networks, public = _allow_entries()
    if _name_listed(host, names):
        return "", addresses[0]
    for address in addresses:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
        if any(ip in network for network in networks) or (public and ip.is_global):
            continue
        return (f"{host} resolves to {ip}, which CITELAB_WEBHOOK_ALLOW does not allow (the server's own "
                "networks are refused unless listed)"), None
    return "", addresses[0]


# -- hooks ----------------------------------------------------------------------------------------------

def _check_lead(project: Project, user: Reviewer | None) -> None:
    if user is not None and not may(member_role(project_id=project.pk, reviewer=user), LEAD):
        raise PermissionDenied(f"Only a lead of project {project.slug!r} manages its webhooks.")


def webhook_create(*, project: Project, url: str, events: list[str], created_by: Reviewer | None) -> Webhook:
    """Register ``url`` for ``events`` (``WebhookEvent`` values) of ``project``,
    with a new random secret. Raises PermissionDenied when ``created_by`` is not
    a lead, ValidationError for no or unknown events or a destination
    :func:`destination_problem` refuses (nothing saved)."""
    _check_lead(project, created_by)
    url = (url or "").strip()
    unknown = sorted(set(events) - set(WebhookEvent.values))
    if unknown:
        raise ValidationError(f"Unknown event(s) {', '.join(unknown)}: choose among {', '.join(WebhookEvent.values)}.",
                              code="bad_events")
    if not events:
        raise ValidationError("Choose at least one event to send.", code="bad_events")
    if len(url) > Webhook._meta.get_field("url").max_length:
        raise ValidationError("The URL is longer than 2,000 characters.", code="bad_url")
    problem, _ = destination_problem(url)
    if problem:
        raise ValidationError(f"Webhook URL refused: {problem}.", code="bad_url")
    return Webhook.objects.create(project=project, url=url, events=sorted(set(events)),
                                  secret=secrets.token_hex(32), created_by=created_by)


def webhook_delete(*, webhook: Webhook, user: Reviewer | None) -> None:
    """Remove ``webhook`` and its delivery log. PermissionDenied for a non-lead."""
    _check_lead(webhook.project, user)
    webhook.delete()


# -- events ---------------------------------------------------------------------------------------------

def _event_of(event: AuditEvent) -> str | None:
    if event.action == AuditAction.LABEL:
        # A judge run's end is recorded as one "label" event naming the judge run (labeling.judges.runs).
        return WebhookEvent.JUDGE_RUN_FINISHED if "judge_run" in event.detail else WebhookEvent.LABEL_SAVED
    return {AuditAction.ADJUDICATE: WebhookEvent.CLAIM_ADJUDICATED,
            AuditAction.SNAPSHOT: WebhookEvent.VERSION_SAVED}.get(event.action)


@receiver(event_recorded, dispatch_uid="citelab-webhooks")
def audit_recorded(sender: type, *, event: AuditEvent, **kwargs: Any) -> None:
    """Heard from ``audit_record`` (``labeling.audit.event_recorded``) inside the
    change's transaction: when the event is one a webhook can be told about, send it
    to the project's hooks once the change commits (:func:`webhook_emit`). No query now."""
    name = _event_of(event)
    if name is None:
        return
    data = event_row(event)
    run_id = event.run_id
    transaction.on_commit(lambda: _after_commit(event.project_id, run_id, name, data))


def _after_commit(project_id: int, run_id: int | None, name: str, data: dict[str, Any]) -> None:
    hooks = list(Webhook.objects.filter(project_id=project_id, active=True).select_related("project"))
    if not hooks:
        return
    webhook_emit(hooks=hooks, event=name, run_name=data.get("run"), data=data)
    if name in (WebhookEvent.LABEL_SAVED, WebhookEvent.CLAIM_ADJUDICATED) and run_id is not None and any(
            WebhookEvent.RUN_FULLY_LABELED in hook.events for hook in hooks):
        _enqueue("labeling.integrations.webhooks.fully_labeled_check", run_id)


def webhook_emit(*, hooks: list[Webhook] | None = None, project: Project | None = None, event: str,
                 run_name: str | None, data: dict[str, Any]) -> list[WebhookDelivery]:
    """One delivery of ``event`` to each active hook (of ``project``, or ``hooks``)
    subscribed to it, queued once the current transaction commits; a destination
    the allow-list refuses is logged ``refused`` and not queued."""
    if hooks is None:
        hooks = list(Webhook.objects.filter(project=project, active=True).select_related("project"))
    created = []
    for hook in hooks:
        if event not in hook.events and event != TEST_EVENT:
            continue
        delivery = WebhookDelivery.objects.create(webhook=hook, event=event, payload={})
        delivery.payload = {"id": delivery.pk, "event": event,
                            "created_at": delivery.created_at.astimezone(UTC).isoformat().replace("+00:00", "Z"),
                            "project": hook.project.slug, "run": run_name, "data": data}
        delivery.save(update_fields=["payload"])
        created.append(delivery)
        transaction.on_commit(lambda pk=delivery.pk: _enqueue("labeling.integrations.webhooks.delivery_attempt", pk))
    return created


def webhook_test(*, webhook: Webhook, user: Reviewer | None) -> WebhookDelivery:
    """Queue a ``webhook.test`` delivery to ``webhook`` (the page's button)."""
    _check_lead(webhook.project, user)
    (delivery,) = webhook_emit(hooks=[webhook], event=TEST_EVENT, run_name=None,
                               data={"message": "A test delivery from Citelab.",
                                     "sent_by": user.username if user is not None else None})
    return delivery


def fully_labeled_check(run_id: int) -> WebhookDelivery | None:
    """Task: when every cited claim of run ``run_id`` carries the label that counts
    (nothing pending: unlabeled or disputed), send ``run.fully_labeled`` — once per
    state of the run's claims (``Run.claims_version``) and hook."""
    from labeling.review.tallies import run_counts

    run = Run.objects.select_related("project").filter(pk=run_id).first()
    if run is None:
        return None
    # Everyone's labels: counted as for a superuser (never blind); no count here is "their own".
    counts = run_counts(run=run, reviewer=reader_of_everything())
    if not counts.cited or counts.pending:
        return None
    hooks = [hook for hook in Webhook.objects.filter(project=run.project, active=True).select_related("project")
             if WebhookEvent.RUN_FULLY_LABELED in hook.events
             and not hook.deliveries.filter(event=WebhookEvent.RUN_FULLY_LABELED, payload__data__run_id=run.pk,
                                            payload__data__claims_version=run.claims_version).exists()]
    data = {"run_id": run.pk, "claims_version": run.claims_version, "cited": counts.cited,
            "supported": counts.supported, "unsupported": counts.unsupported,
            "support": counts.support.value}
    with transaction.atomic():
        sent = webhook_emit(hooks=hooks, event=WebhookEvent.RUN_FULLY_LABELED, run_name=run.name, data=data)
    return sent[0] if sent else None


# -- delivery -------------------------------------------------------------------------------------------

def signature(secret: str, timestamp: int, body: bytes) -> str:
    """``sha256=<hex>``: HMAC-SHA256 with ``secret`` of ``b"<timestamp>." + body``."""
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256)
    return "sha256=" + mac.hexdigest()


def _post(url: str, address: str, body: bytes, headers: dict[str, str]) -> tuple[int, str]:
    """POST ``body`` to ``url``, connecting to ``address`` (the checked one). Returns
    the status and the start of the answer. Raises OSError on a network failure."""
    parts = urlsplit(url)
    https = parts.scheme == "https"
    port = parts.port or (443 if https else 80)
    sock = socket.create_connection((address, port), timeout=TIMEOUT_SECONDS)
    if https:
        sock = ssl.create_default_context().wrap_socket(sock, server_hostname=parts.hostname)
        connection: http.client.HTTPConnection = http.client.HTTPSConnection(parts.hostname, port,
                                                                             timeout=TIMEOUT_SECONDS)
    else:
        connection = http.client.HTTPConnection(parts.hostname, port, timeout=TIMEOUT_SECONDS)
    connection.sock = sock
    try:
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        connection.request("POST", path, body=body, headers=headers)
        response = connection.getresponse()
        return response.status, response.read(_READ_LIMIT).decode("utf-8", "replace")
    finally:
        connection.close()


def delivery_attempt(delivery_id: int) -> WebhookDelivery:
    """Task: one attempt of delivery ``delivery_id``, logged on the row; on a
    failure, the next attempt is queued after the backoff, until six attempts."""
    delivery = WebhookDelivery.objects.select_related("webhook__project").get(pk=delivery_id)
    if delivery.status != DeliveryStatus.QUEUED:
        return delivery
    hook = delivery.webhook
    problem, address = destination_problem(hook.url)
    now = timezone.now()
    delivery.attempts += 1
    delivery.last_attempt_at = now
    if problem:
        delivery.status, delivery.error = DeliveryStatus.REFUSED, problem
        delivery.save(update_fields=["attempts", "last_attempt_at", "status", "error"])
        logger.warning("webhook %s: delivery %s refused: %s", hook.pk, delivery.pk, problem)
        return delivery
    body = json.dumps(delivery.payload, ensure_ascii=False, separators=(",", ":")).encode()
    timestamp = int(time.time())
    headers = {"Content-Type": "application/json", "User-Agent": _USER_AGENT, "X-Citelab-Event": delivery.event,
               "X-Citelab-Delivery": str(delivery.pk), "X-Citelab-Timestamp": str(timestamp),
               "X-Citelab-Signature": signature(hook.secret, timestamp, body)}
    try:
        status, answer = _post(hook.url, address, body, headers)
        delivery.response_status, delivery.error = status, "" if 200 <= status < 300 else answer[:500]
    except (OSError, http.client.HTTPException) as exc:
        status, delivery.response_status, delivery.error = None, None, f"{type(exc).__name__}: {exc}"[:500]
    if status is not None and 200 <= status < 300:
        delivery.status, delivery.delivered_at = DeliveryStatus.DELIVERED, timezone.now()
    elif delivery.attempts >= MAX_ATTEMPTS:
        delivery.status = DeliveryStatus.FAILED
    delivery.save(update_fields=["attempts", "last_attempt_at", "status", "error", "response_status",
                                 "delivered_at"])
    if delivery.status == DeliveryStatus.QUEUED:
        _retry(delivery)
    return delivery


def retry_delay(attempts: int) -> float:
    """Seconds before the attempt after ``attempts`` failed ones: 30 s, 1, 2, 4, 8 min by default."""
    return settings.CITELAB_WEBHOOK_RETRY_SECONDS * 2 ** (attempts - 1)


def _retry(delivery: WebhookDelivery) -> None:
    delay = retry_delay(delivery.attempts)
    if settings.CITELAB_TASKS_SYNC:
        # No worker: this process waits, then tries again.
        time.sleep(delay)
        delivery_attempt(delivery.pk)
        return
    from django_q.models import Schedule
    from django_q.tasks import schedule

    schedule("labeling.integrations.webhooks.delivery_attempt", delivery.pk, schedule_type=Schedule.ONCE, repeats=1,
             next_run=timezone.now() + timedelta(seconds=delay), name=f"webhook-delivery-{delivery.pk}-"
                                                                       f"{delivery.attempts}")


def _enqueue(func: str, *args: Any) -> None:
    from django_q.tasks import async_task

    async_task(func, *args, sync=settings.CITELAB_TASKS_SYNC)
