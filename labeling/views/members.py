"""A project's members page: leads add existing reviewers, change roles, remove members."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from labeling import selectors
from labeling.memberships import membership_remove, membership_set
from labeling.models import Membership, Reviewer, ReviewerKind, Role
from labeling.views.projects import project_for


@login_required
@require_http_methods(["GET", "POST"])
def project_members(request: HttpRequest, project_slug: str) -> HttpResponse:
    project = project_for(request, project_slug, selectors.LEAD)
    if request.method == "POST":
        action = request.POST.get("action", "")
        name = Reviewer.normalize_username(request.POST.get("reviewer", ""))
        reviewer = Reviewer.objects.filter(username=name, kind=ReviewerKind.HUMAN).first()
        try:
            if reviewer is None:
                raise ValidationError(f"No reviewer account is named {name!r}: create it first with "
                                      f"manage.py add_reviewer {name or 'NAME'} --project {project.slug}.")
            if action == "remove":
                membership_remove(project=project, reviewer=reviewer)
                messages.success(request, f"Removed {reviewer.username} from {project.slug}.")
            else:
                role = request.POST.get("role", "")
                membership_set(project=project, reviewer=reviewer, role=role)
                messages.success(request, f"{reviewer.username} is {role} of {project.slug}.")
        except ValidationError as exc:
            messages.error(request, " ".join(exc.messages))
        return redirect("project_members", project_slug=project.slug)
    memberships = (Membership.objects.filter(project=project).select_related("reviewer")
                   .order_by("reviewer__username"))
    return render(request, "labeling/project_members.html", {
        "project": project, "memberships": memberships, "roles": Role.choices,
    })
