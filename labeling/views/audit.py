"""The run's audit log page, for leads (``labeling.audit``)."""

from __future__ import annotations

from datetime import date
from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from labeling.audit import AuditFilter, run_actors, run_events
from labeling.models import AuditAction
from labeling.permissions import LEAD
from labeling.views.projects import run_for

EVENTS_PER_PAGE = 50


@login_required
@require_GET
def run_audit(request: HttpRequest, project_slug: str, run_name: str) -> HttpResponse:
    """Who did what to the run and when, newest first, filtered by actor,
    action and days (``?actor=&action=&since=YYYY-MM-DD&until=…``), 50 a page.
    Queries: the run and role (1), the actors (1), the count and the page (2)."""
    run = run_for(request, project_slug, run_name, LEAD)
    errors = []
    since, until = (_day(request.GET.get(key, ""), key, errors) for key in ("since", "until"))
    action = request.GET.get("action", "")
    if action and action not in AuditAction.values:
        errors.append(f"Unknown action {action!r}: choose one from the list.")
        action = ""
    actors = run_actors(run=run)
    actor = request.GET.get("actor", "")
    chosen = AuditFilter(actor=actor, action=action, since=since, until=until)
    page = Paginator(run_events(run=run, filter=chosen), EVENTS_PER_PAGE).get_page(request.GET.get("page"))
    # The filter, kept in the pager's links.
    kept = urlencode({key: value for key, value in (("actor", actor), ("action", action),
                                                   ("since", since or ""), ("until", until or "")) if value})
    return render(request, "labeling/run_audit.html", {
        "project": run.project, "run": run, "page": page, "events": [(event, _detail(event.detail))
                                                                      for event in page.object_list],
        "actors": actors, "actions": AuditAction.choices, "filter": chosen, "errors": errors, "kept": kept,
    })


def _day(text: str, key: str, errors: list[str]) -> date | None:
    if not text:
        return None
    try:
        return date.fromisoformat(text)
    except ValueError:
        errors.append(f"{key}: {text[:40]!r} is not a day; write it as 2025-01-31.")
        return None


def _detail(detail: dict) -> list[tuple[str, str]]:
    """``detail`` as (key, text) pairs for the page, blanks left out."""
    shown = [(key, str(value)) for key, value in sorted(detail.items()) if value not in (None, "", [], {})]
    # A hash is recognised by its first 12 hex digits, as on the versions page.
    return [(key, value[:12] + "…" if key == "sha256" else value) for key, value in shown]
