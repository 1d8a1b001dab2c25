"""Project and run pages."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from labeling.models import Project, Run


@login_required
def project_list(request: HttpRequest) -> HttpResponse:
    projects = Project.objects.all() if request.user.is_superuser else request.user.projects.all()
    return render(request, "labeling/project_list.html", {"projects": projects})


@login_required
def project_detail(request: HttpRequest, project_slug: str) -> HttpResponse:
    project = get_object_or_404(Project, slug=project_slug)
    return render(request, "labeling/project_detail.html", {"project": project, "runs": project.runs.all()})


@login_required
def run_detail(request: HttpRequest, project_slug: str, run_name: str) -> HttpResponse:
    run = get_object_or_404(Run.objects.select_related("project"), project__slug=project_slug, name=run_name)
    return render(request, "labeling/run_detail.html", {"project": run.project, "run": run})
