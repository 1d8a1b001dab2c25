"""Renaming and deleting a run from its page. Who may do either is decided by
``labeling.permissions.run_manage_allowed`` alone."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRedirect

from labeling.permissions import run_manage_allowed
from labeling.runs import run_contents, run_delete, run_rename
from labeling.views.htmx import HtmxHttpRequest
from labeling.views.projects import run_for


def _go(request: HtmxHttpRequest, url: str) -> HttpResponse:
    """Redirect, as htmx wants it (a full page load: the URL changed) or plainly."""
    return HttpResponseClientRedirect(url) if request.htmx else redirect(url)


@login_required
@require_POST
def run_rename_view(request: HtmxHttpRequest, project_slug: str, run_name: str) -> HttpResponse:
    run = run_for(request, project_slug, run_name)
    name = request.POST.get("name", "")
    try:
        renamed = run_rename(run=run, user=request.user, name=name)
    except ValidationError as exc:
        error = " ".join(exc.messages)
        if request.htmx:
            return render(request, "labeling/_run_manage.html#rename-form",
                          {"project": run.project, "run": run, "rename_error": error, "rename_value": name})
        messages.error(request, error)
        return redirect(run.get_absolute_url())
    if renamed.name != run_name:
        messages.success(request, f"Renamed run “{run_name}” to “{renamed.name}”.")
    return _go(request, renamed.get_absolute_url())


@login_required
@require_http_methods(["GET", "POST"])
def run_delete_view(request: HtmxHttpRequest, project_slug: str, run_name: str) -> HttpResponse:
    """GET: what deleting the run loses, and a way to keep its labels first; POST: delete it."""
    run = run_for(request, project_slug, run_name)
    if not run_manage_allowed(user=request.user, run=run):
        raise PermissionDenied("Only a lead of the project can delete its runs.")
    if request.method == "POST":
        contents = run_delete(run=run, user=request.user)
        messages.success(request, f"Deleted run “{run_name}”: {contents.answers} answers, {contents.claims} claims, "
                                  f"{contents.labels} labels and {contents.versions} version records (the "
                                  "version files stay in storage).")
        return _go(request, run.project.get_absolute_url())
    latest = run.versions.order_by("-number").first()
    return render(request, "labeling/run_delete.html", {
        "project": run.project, "run": run, "contents": run_contents(run=run), "latest": latest,
    })

