"""A project's API tokens page (SPEC §6), for its leads: make a token for a
member or a new bot account, see each token's last use, revoke one."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from labeling import permissions
from labeling.integrations.tokens import (
    DEFAULT_EXPIRY_DAYS,
    MAX_EXPIRY_DAYS,
    bot_create,
    project_tokens,
    token_create,
    token_revoke,
    token_state,
)
from labeling.models import ApiToken, Membership, Project, Reviewer, Role
from labeling.views.params import int_param
from labeling.views.projects import project_for


def _page(request: HttpRequest, project: Project, *, issued=None, error: str = "",
          form: dict | None = None) -> HttpResponse:
    tokens = project_tokens(project=project)
    members = (Membership.objects.filter(project=project).select_related("reviewer")
               .order_by("reviewer__username"))
    return render(request, "labeling/project_tokens.html", {
        "project": project, "rows": [(token, token_state(token)) for token in tokens], "members": members,
        "roles": Role.choices, "issued": issued, "error": error, "form": form or {},
        "default_days": DEFAULT_EXPIRY_DAYS, "max_days": MAX_EXPIRY_DAYS,
    })


@login_required
@require_http_methods(["GET", "POST"])
def project_tokens_page(request: HttpRequest, project_slug: str) -> HttpResponse:
    project = project_for(request, project_slug, permissions.LEAD)
    if request.method == "GET":
        return _page(request, project)
    form = {key: request.POST.get(key, "").strip() for key in ("reviewer", "bot", "role", "name", "days")}
    days = int_param(form["days"]) if form["days"] else DEFAULT_EXPIRY_DAYS
    try:
        if days is None:
            raise ValidationError(f"Expires after: a whole number of days from 1 to {MAX_EXPIRY_DAYS}.")
        if form["bot"]:
            holder = bot_create(project=project, name=form["bot"], role=form["role"] or Role.REVIEWER,
                                created_by=request.user)
        else:
            holder = Reviewer.objects.filter(username=Reviewer.normalize_username(form["reviewer"])).first()
            if holder is None:
                raise ValidationError("Choose the member the token acts as, or name a new bot account.")
        issued = token_create(project=project, reviewer=holder, created_by=request.user, name=form["name"],
                              role=form["role"] or None, expires_days=days)
    except ValidationError as exc:
        return _page(request, project, error=" ".join(exc.messages), form=form)
    # Shown in this response only: it is never stored, and a redirect would have to carry it.
    return _page(request, project, issued=issued)


@login_required
@require_POST
def project_token_revoke(request: HttpRequest, project_slug: str, token_id: int) -> HttpResponse:
    project = project_for(request, project_slug, permissions.LEAD)
    token = get_object_or_404(ApiToken.objects.select_related("project"), project=project, pk=token_id)
    token_revoke(token=token, by=request.user)
    messages.success(request, f"Revoked token {token.name!r}: requests with it now answer 401.")
    return redirect("project_tokens", project_slug=project.slug)
