"""Reviewer quality pages (SPEC §4.4): a project's guidelines, the reviewer
dashboards of a run and a project, a run's gold checks, and the lead's actions
on one claim (mark it gold, send a reviewer's label back)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from labeling import permissions
from labeling.models import Claim, Reviewer, Run
from labeling.review import screen
from labeling.team import gold_claims, guidelines, quality, send_backs
from labeling.views.params import int_param
from labeling.views.projects import project_for, review_url, run_for

MAX_GOLD_FILE_BYTES = 5 * 1024 * 1024


def _float(value: str | None) -> float | None:
    try:
        return float(value) if value not in (None, "") else None
    except ValueError:
        return None


def _back(request: HttpRequest, default: str) -> HttpResponse:
    """Redirect to the page the form came from (``next``, a path of this site) or ``default``."""
    target = request.POST.get("next", "")
    if not url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()},
                                           require_https=request.is_secure()):
        target = default
    return redirect(target)


@login_required
@require_http_methods(["GET", "POST"])
def project_guidelines(request: HttpRequest, project_slug: str) -> HttpResponse:
    """Read the guidelines (any member; ``?version=N`` an older one); a lead saves a new version."""
    project = project_for(request, project_slug, permissions.LEAD if request.method == "POST" else permissions.READ)
    typed, error = None, ""
    if request.method == "POST":
        typed = request.POST.get("text", "")
        try:
            saved = guidelines.guidelines_save(project=project, author=request.user, text=typed)
        except ValidationError as exc:
            error = " ".join(exc.messages)
        else:
            messages.success(request, f"Saved the guidelines as version {saved.number}: labels saved from now on "
                                      "record it.")
            return redirect("project_guidelines", project_slug=project.slug)
    versions = list(guidelines.guidelines_versions(project=project))
    wanted = int_param(request.GET.get("version"))
    shown = next((v for v in versions if v.number == wanted), versions[0] if versions else None)
    if wanted is not None and (shown is None or shown.number != wanted):
        raise Http404(f"Project {project.slug!r} has no guidelines version {wanted}.")
    return render(request, "labeling/project_guidelines.html", {
        "project": project, "versions": versions, "shown": shown,
        "rendered": guidelines.render_guidelines(shown.text) if shown else "",
        "may_edit": permissions.may(project.my_role, permissions.LEAD), "error": error,
        "text": typed if typed is not None else (versions[0].text if versions else ""),
        "max_chars": guidelines.MAX_GUIDELINES_CHARS,
    })


@login_required
@require_GET
def project_dashboard(request: HttpRequest, project_slug: str) -> HttpResponse:
    project = project_for(request, project_slug, permissions.QUALITY)
    board = quality.project_dashboard(project=project)
    sort = request.GET.get("sort", "reviewer")
    return render(request, "labeling/reviewer_dashboard.html", {
        "project": project, "run": None, "board": board, "rows": quality.sort_rows(board.rows, sort), "sort": sort,
        "columns": _columns(),
    })


@login_required
@require_GET
def run_dashboard(request: HttpRequest, project_slug: str, run_name: str) -> HttpResponse:
    run = run_for(request, project_slug, run_name, permissions.QUALITY)
    board = quality.run_dashboard(run=run)
    sort = request.GET.get("sort", "reviewer")
    return render(request, "labeling/reviewer_dashboard.html", {
        "project": run.project, "run": run, "board": board, "rows": quality.sort_rows(board.rows, sort),
        "sort": sort, "columns": _columns(), "rate_percent": f"{run.gold_rate * 100:g}",
    })


def _columns() -> list[tuple[str, str]]:
    """(sort key, heading) of the dashboard's sortable columns."""
    return [("reviewer", "Reviewer"), ("labels", "Labels"), ("median_seconds", "Median s / claim"),
            ("unsupported_share", "UNSUPPORTED share"), ("kappa", "Kappa vs counted label"),
            ("gold_accuracy", "Gold accuracy"), ("send_backs_open", "Open send-backs")]


@login_required
@require_http_methods(["GET", "POST"])
def run_gold_checks(request: HttpRequest, project_slug: str, run_name: str) -> HttpResponse:
    """A lead's page of a run's gold checks: the gold claims, the rate, feedback, the
    rule, leaving unqualified reviewers out, and a gold file to import."""
    run = run_for(request, project_slug, run_name, permissions.LEAD)
    if request.method == "POST":
        action = request.POST.get("action", "")
        try:
            if action == "settings":
                rate = _float(request.POST.get("gold_rate"))
                if rate is None:
                    raise ValidationError("Give the gold rate as a number, e.g. 5 for 5 %.")
                gold_claims.quality_settings_set(
                    run=run, gold_rate=rate / 100, feedback=request.POST.get("feedback") == "on",
                    min_lower=_float(request.POST.get("min_lower")),
                    min_gold=int_param(request.POST.get("min_gold")),
                    exclude_unqualified=request.POST.get("exclude_unqualified") == "on")
                messages.success(request, f"Gold checks on {run.name}: {run.gold_rate * 100:g}% of each reviewer's "
                                          f"work, feedback {'on' if run.feedback else 'off'}.")
            elif action == "import":
                upload = request.FILES.get("file")
                if upload is None:
                    raise ValidationError("Choose a gold file (CSV or JSON Lines) to import.")
                if upload.size > MAX_GOLD_FILE_BYTES:
                    raise ValidationError(f"{upload.name}: larger than {MAX_GOLD_FILE_BYTES // 2**20} MB.")
                rows = gold_claims.gold_rows_read(upload.read(), name=upload.name)
                count = gold_claims.gold_import(run=run, rows=rows, actor=request.user)
                messages.success(request, f"Marked {count} claim{'' if count == 1 else 's'} gold from {upload.name}.")
            elif action == "unmark":
                claim = screen.claim_in_run(run=run, claim_id=int_param(request.POST.get("claim")) or 0)
                if claim is None or not gold_claims.gold_unmark(run=run, claim=claim, lead=request.user):
                    raise ValidationError("That claim is not a gold claim of this run.")
                messages.success(request, f"Claim {claim.index} of {claim.answer.question_key} is no longer gold.")
            else:
                raise ValidationError(f"Unknown action {action!r}.")
        except ValidationError as exc:
            for message in exc.messages[:20]:
                messages.error(request, message)
        return redirect("run_gold_checks", project_slug=project_slug, run_name=run.name)
    return render(request, "labeling/run_gold_checks.html", {
        "project": run.project, "run": run, "gold": quality.gold_claim_rows(run=run),
        "rate_percent": f"{run.gold_rate * 100:g}",
    })


def _lead_claim(request: HttpRequest, project_slug: str, run_name: str, claim_id: int) -> tuple[Run, Claim]:
    run = run_for(request, project_slug, run_name, permissions.LEAD)
    claim = screen.claim_in_run(run=run, claim_id=claim_id)
    if claim is None:
        raise Http404(f"Claim {claim_id} is not a claim of run {run.name!r}.")
    return run, claim


@login_required
@require_POST
def claim_gold(request: HttpRequest, project_slug: str, run_name: str, claim_id: int) -> HttpResponse:
    """A lead marks the claim gold: from their adjudication, their own label, or a value given."""
    run, claim = _lead_claim(request, project_slug, run_name, claim_id)
    try:
        gold = gold_claims.gold_mark(run=run, claim=claim, lead=request.user, source=request.POST.get("source", ""),
                                     value=request.POST.get("value", ""), reason=request.POST.get("reason", ""))
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
    else:
        messages.success(request, f"Claim {claim.index} of {claim.answer.question_key} is a gold check: "
                                  f"{gold.value}. Reviewers never see it as gold.")
    return _back(request, review_url(run, claim.answer_id, claim.pk))


@login_required
@require_POST
def claim_send_back(request: HttpRequest, project_slug: str, run_name: str, claim_id: int) -> HttpResponse:
    """A lead sends one reviewer's label on the claim back for rework, with a comment."""
    run, claim = _lead_claim(request, project_slug, run_name, claim_id)
    name = Reviewer.normalize_username(request.POST.get("reviewer", ""))
    reviewer = Reviewer.objects.filter(username=name).first()
    try:
        if reviewer is None:
            raise ValidationError(f"No reviewer is named {name!r}.")
        send_backs.send_back_create(run=run, claim=claim, reviewer=reviewer, lead=request.user,
                                    comment=request.POST.get("comment", ""))
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
    else:
        messages.success(request, f"Sent {reviewer.username}'s label on claim {claim.index} of "
                                  f"{claim.answer.question_key} back: it comes first in their queue.")
    return _back(request, review_url(run, claim.answer_id, claim.pk))
