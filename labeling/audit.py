"""The audit log: who labeled, edited, split, merged, adjudicated, saved a
version of, imported into or exported what run, and when (SPEC §7).

Writes: :func:`audit_record`, called by the service that made the change,
inside its transaction (a refused or rolled-back change leaves no event), or
by the view that served a download. One INSERT, no other query: label saves
stay as fast as before but for that row. Not signals (STYLE §9).

Who (the actor), one rule for every path: the account that asked for the
change in the browser; for every management command "command line"
(:data:`COMMAND_LINE`, no account: whoever runs ``manage.py`` on the server),
whatever reviewer the command names. A name a command is given
(``import_labels --reviewer``, ``snapshot --author``, ``export_labels
--reviewer``, ``import_answers --reviewer``, a judge's name) is in the
event's detail under that word (``reviewer``, ``author``, ``judge``), never
its actor: typing ``--reviewer demo`` does not make an event demo's.

Reads: :func:`run_events` (the run's audit page, filtered and paginated)
and :func:`events_for_run_name` (``manage.py audit``, which also finds the
events of a deleted run by its name), and :func:`event_row`, the one plain
shape both print.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from django.db.models import QuerySet
from django.dispatch import Signal
from django.utils import timezone

from labeling.models import AuditEvent, Claim, Project, Reviewer, Run

COMMAND_LINE = "command line"
# The name of the API token a request authenticated with (labeling.api): every
# event recorded while it is set names it, so each API write is audited with
# the token that made it, whichever service records the event.
_API_TOKEN: ContextVar[str | None] = ContextVar("citelab_audit_api_token", default=None)
# Sent with ``event=`` inside the change's transaction for every event recorded;
# the webhooks (labeling.integrations.webhooks) listen, so the audit trail does
# not import the integrations above it.
event_recorded = Signal()


@contextmanager
def api_token_events(name: str) -> Iterator[None]:
    """Within the block, every :func:`audit_record` adds ``"token": name`` to its
    ``detail``: the HTTP API wraps each operation in it (SPEC §6)."""
    reset = _API_TOKEN.set(name)
    try:
        yield
    finally:
        _API_TOKEN.reset(reset)


def audit_record(
    *, action: str, actor: Reviewer | None, run: Run, target: str = "", claim_id: int | None = None,
    detail: dict[str, Any] | None = None,
) -> AuditEvent:
    """Record that ``actor`` (None: the command line) did ``action`` (an
    ``AuditAction``) to ``run``; ``target`` names what, as a person reads it
    (``"q7 · claim 3"``, ``"version 4"``, a file name; cut to 300 characters),
    ``claim_id`` the claim when there is one, ``detail`` free metadata (JSON
    values). One INSERT; call it inside the change's transaction. Inside
    :func:`api_token_events` the detail names the API token too. The events
    webhooks are told about (``event_recorded``, heard by
    ``labeling.integrations.webhooks.audit_recorded``) look the project's hooks up
    once the transaction commits: one query more then."""
    token = _API_TOKEN.get()
    if token is not None:
        detail = {**(detail or {}), "token": token}
    event = AuditEvent.objects.create(
        action=action, actor=actor, actor_name=actor.username if actor is not None else "",
        project_id=run.project_id, run=run, run_name=run.name, claim_id=claim_id, target=target[:300],
        detail=detail or {},
    )
    # Labels, adjudications, versions and judge runs are also webhook events: sent once this commits.
    event_recorded.send(sender=AuditEvent, event=event)
    return event


def claim_target(claim: Claim, *, index: int | None = None) -> str:
    """``"q7 · claim 3"``: the claim's question id and index (``index`` when the
    caller holds a fresher one). Reads ``claim.answer``, which callers hold."""
    return f"{claim.answer.question_key} · claim {claim.index if index is None else index}"


@dataclass(frozen=True)
class AuditFilter:
    """What the audit page (and the command) narrow the log to; each part
    optional: an actor's name (``COMMAND_LINE`` for events without one), an
    ``AuditAction`` value, and a day range, both days included (UTC)."""

    actor: str = ""
    action: str = ""
    since: date | None = None
    until: date | None = None

    def apply(self, events: QuerySet[AuditEvent]) -> QuerySet[AuditEvent]:
        if self.actor:
            events = events.filter(actor_name="" if self.actor == COMMAND_LINE else self.actor)
        if self.action:
            events = events.filter(action=self.action)
        if self.since is not None:
            events = events.filter(at__gte=_start_of(self.since))
        if self.until is not None:
            events = events.filter(at__lt=_start_of(self.until + timedelta(days=1)))
        return events


def _start_of(day: date) -> datetime:
    return datetime.combine(day, time.min, tzinfo=timezone.get_current_timezone())


def run_events(*, run: Run, filter: AuditFilter = AuditFilter()) -> QuerySet[AuditEvent]:
    """The events of ``run`` (under any name it had), newest first, narrowed by
    ``filter``. No join: every column shown is on the event row."""
    return filter.apply(AuditEvent.objects.filter(run=run)).order_by("-at", "-id")


def run_actors(*, run: Run) -> list[str]:
    """Names of everyone with an event on ``run`` (``COMMAND_LINE`` for the
    command line), sorted: the audit page's actor choices. One query, one row a name."""
    # Without the model's default ordering: DISTINCT would take its columns too (one row an event).
    names = AuditEvent.objects.filter(run=run).order_by().values_list("actor_name", flat=True).distinct()
    return sorted({name or COMMAND_LINE for name in names})


def events_for_run_name(*, project: Project, run_name: str,
                        filter: AuditFilter = AuditFilter()) -> QuerySet[AuditEvent]:
    """The events of the run now named ``run_name`` in ``project`` (under any
    name it had), and of a deleted run that had that name; oldest first, as a
    log is read."""
    run = Run.objects.filter(project=project, name=run_name).first()
    events = AuditEvent.objects.filter(project=project)
    if run is not None:
        events = events.filter(run=run) | events.filter(run__isnull=True, run_name=run_name)
    else:
        events = events.filter(run__isnull=True, run_name=run_name)
    return filter.apply(events).order_by("at", "id")


def event_row(event: AuditEvent) -> dict[str, Any]:
    """An event as plain JSON values: ``at`` (ISO 8601, UTC), ``actor`` (a
    name, or ``"command line"``), ``action`` (an ``AuditAction`` value),
    ``run`` (its name at the time), ``target``, ``claim_id`` (or null) and
    ``detail``."""
    return {
        "at": event.at.astimezone(UTC).isoformat().replace("+00:00", "Z"),
        "actor": event.actor_name or COMMAND_LINE,
        "action": event.action,
        "run": event.run_name,
        "target": event.target,
        "claim_id": event.claim_id,
        "detail": event.detail,
    }

