"""A project's webhooks page (SPEC §6), for its leads: register a URL for
events, see each hook's deliveries (status, attempts, the receiver's answer),
send a test delivery, remove a hook."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from labeling import permissions
from labeling.integrations.webhooks import webhook_create, webhook_delete, webhook_test
from labeling.models import Project, Webhook, WebhookEvent
from labeling.views.projects import project_for

# Deliveries shown per hook: the newest.
SHOWN_DELIVERIES = 20


def _page(request: HttpRequest, project: Project, *, error: str = "", form: dict | None = None) -> HttpResponse:
    hooks = list(Webhook.objects.filter(project=project).order_by("created_at", "id"))
    for hook in hooks:
        # One small query per hook (a project has a handful): its newest deliveries.
        hook.recent = list(hook.deliveries.order_by("-created_at", "-id")[:SHOWN_DELIVERIES])
    return render(request, "labeling/project_webhooks.html", {
        "project": project, "hooks": hooks, "events": WebhookEvent.choices, "error": error, "form": form or {},
    })


@login_required
@require_http_methods(["GET", "POST"])
def project_webhooks(request: HttpRequest, project_slug: str) -> HttpResponse:
    project = project_for(request, project_slug, permissions.LEAD)
    if request.method == "GET":
        return _page(request, project)
    form = {"url": request.POST.get("url", "").strip(), "events": request.POST.getlist("events")}
    try:
        hook = webhook_create(project=project, url=form["url"], events=form["events"], created_by=request.user)
    except ValidationError as exc:
        return _page(request, project, error=" ".join(exc.messages), form=form)
    messages.success(request, f"Webhook {hook.url} registered for {', '.join(hook.events)}.")
    return redirect("project_webhooks", project_slug=project.slug)


def _hook(request: HttpRequest, project_slug: str, hook_id: int) -> Webhook:
    project = project_for(request, project_slug, permissions.LEAD)
    return get_object_or_404(Webhook.objects.select_related("project"), project=project, pk=hook_id)


@login_required
@require_POST
def project_webhook_test(request: HttpRequest, project_slug: str, hook_id: int) -> HttpResponse:
    hook = _hook(request, project_slug, hook_id)
    delivery = webhook_test(webhook=hook, user=request.user)
    delivery.refresh_from_db()
    messages.success(request, f"Test delivery {delivery.pk} to {hook.url}: {delivery.get_status_display()}.")
    return redirect("project_webhooks", project_slug=project_slug)


@login_required
@require_POST
def project_webhook_delete(request: HttpRequest, project_slug: str, hook_id: int) -> HttpResponse:
    hook = _hook(request, project_slug, hook_id)
    webhook_delete(webhook=hook, user=request.user)
    messages.success(request, f"Removed the webhook {hook.url} and its delivery log.")
    return redirect("project_webhooks", project_slug=project_slug)
