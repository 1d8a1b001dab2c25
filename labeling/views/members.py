"""Team pages: a project's members (leads add, change, remove), a run's reviewers, adjudication."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from labeling import permissions
from labeling.models import GoldSource, Membership, Reviewer, ReviewerKind, Role
from labeling.team import adjudication, assignments, gold_claims
from labeling.team.memberships import (
    membership_remove,
    membership_set,
    project_settings_set,
    run_assign,
    run_settings_set,
)
from labeling.views.params import int_param
from labeling.views.projects import project_for, run_for


@login_required
@require_http_methods(["GET", "POST"])
def project_members(request: HttpRequest, project_slug: str) -> HttpResponse:
    project = project_for(request, project_slug, permissions.LEAD)
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


@login_required
@require_http_methods(["GET", "POST"])
def project_settings(request: HttpRequest, project_slug: str) -> HttpResponse:
    """A lead's settings of the project: judging each citation, a justification for SUPPORTED."""
    project = project_for(request, project_slug, permissions.LEAD)
    if request.method == "POST":
        project_settings_set(project=project, judge_citations=request.POST.get("judge_citations") == "on",
                             require_justification_for_supported=request.POST.get("require_supported") == "on")
        messages.success(request, "Judging each citation is " + ("on" if project.judge_citations else "off")
                         + "; a SUPPORTED label " + ("needs" if project.require_justification_for_supported
                                                     else "does not need") + " a justification.")
        return redirect("project_settings", project_slug=project.slug)
    return render(request, "labeling/project_settings.html", {"project": project})


BLIND_CHOICES = {"auto": None, "on": True, "off": False}


@login_required
@require_http_methods(["GET", "POST"])
def run_reviewers(request: HttpRequest, project_slug: str, run_name: str) -> HttpResponse:
    """Who works on the run and how far each got; leads set the overlap, blind labeling and the assignment."""
    run = run_for(request, project_slug, run_name, permissions.LEAD if request.method == "POST" else permissions.READ)
    if request.method == "POST":
        overlap = request.POST.get("overlap", "")
        names = request.POST.getlist("assigned")
        reviewers = list(Reviewer.objects.filter(username__in=names))
        try:
            run_settings_set(run=run, overlap=int_param(overlap) or overlap,
                             blind=BLIND_CHOICES.get(request.POST.get("blind", "auto")))
            run_assign(run=run, reviewers=reviewers)
        except ValidationError as exc:
            messages.error(request, " ".join(exc.messages))
        else:
            who = ", ".join(sorted(r.username for r in reviewers)) or "every lead and reviewer"
            messages.success(request, f"Each claim of {run.name} needs {run.overlap} reviewer"
                                      f"{'' if run.overlap == 1 else 's'}; labeling is "
                                      f"{'blind' if run.is_blind else 'open'}; working on it: {who}.")
        return redirect("run_reviewers", project_slug=project_slug, run_name=run.name)
    team = assignments.run_reviewers(run=run)
    members = (Membership.objects.filter(project=run.project, role__in=permissions.roles_that_may(permissions.LABEL))
               .select_related("reviewer").order_by("reviewer__username"))
    assigned = {row.reviewer.pk for row in team.rows if row.works_on} if team.assigned else set()
    return render(request, "labeling/run_reviewers.html", {
        "project": run.project, "run": run, "team": team, "members": members, "assigned_ids": assigned,
        "is_lead": permissions.may(run.my_role, permissions.LEAD), "overlaps": range(1, 6),
        "blind_choice": next(k for k, v in BLIND_CHOICES.items() if v == run.blind),
    })


@login_required
@require_http_methods(["GET", "POST"])
def run_adjudicate(request: HttpRequest, project_slug: str, run_name: str) -> HttpResponse:
    """The lead's adjudication page: one disputed claim at a time, keys 1/2, a reason, Enter."""
    run = run_for(request, project_slug, run_name, permissions.LEAD)
    error, typed = "", {"value": "", "reason": ""}
    claim_param = request.POST.get("claim") if request.method == "POST" else request.GET.get("claim", "")
    claim_id = int_param(claim_param)
    if request.method == "POST":
        claim = adjudication.disputed_claims(run=run).filter(pk=claim_id).first() if claim_id else None
        typed = {"value": request.POST.get("value", ""), "reason": request.POST.get("reason", "")}
        try:
            if claim is None:
                raise ValidationError("That claim is no longer disputed (adjudicated meanwhile, or its labels "
                                      "changed): here is the next one.")
            with transaction.atomic():
                verdict = adjudication.adjudication_save(claim=claim, lead=request.user, value=typed["value"],
                                                         reason=typed["reason"])
                if request.POST.get("gold") == "on":
                    # SPEC §4.4: the verdict becomes a hidden gold check for the run's reviewers.
                    gold_claims.gold_mark(run=run, claim=claim, lead=request.user, source=GoldSource.ADJUDICATION)
        except ValidationError as exc:
            error = " ".join(exc.messages)
        else:
            gold = " and marked gold" if request.POST.get("gold") == "on" else ""
            messages.success(request, f"Claim {claim.index} of {claim.answer.question.question_id}: "
                                      f"{verdict.value} (adjudicated{gold}).")
            return redirect("run_adjudicate", project_slug=project_slug, run_name=run.name)
    disputes = adjudication.disputed_claims(run=run)
    listed = list(disputes[:adjudication.DISPUTES_LISTED])
    dispute = adjudication.dispute_view(run=run, claim_id=claim_id)
    return render(request, "labeling/run_adjudicate.html", {
        "project": run.project, "run": run, "dispute": dispute, "disputes": listed,
        "n_disputes": len(listed) if len(listed) < adjudication.DISPUTES_LISTED else disputes.count(),
        "error": error, "typed": typed,
    })
