"""Project list, project page (its runs) and run page (its answers)."""

from __future__ import annotations

from django import forms
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import require_GET

from labeling import permissions
from labeling.models import Project, Run
from labeling.permissions import run_manage_allowed
from labeling.review import screen, tallies
from labeling.scores import charts, metrics
from labeling.scores.figure_cache import cached_figure, run_state_of
from labeling.team import assignments, quality
from labeling.views.htmx import HtmxHttpRequest
from scoring.figures import figure_interval
from scoring.judgments import DEFAULT_RULE, RULES, JudgmentMetrics
from scoring.matching import DEFAULT_MATCH_METHOD, DEFAULT_NGRAM_THRESHOLD
from scoring.summary import mean_row

# Up to this many answers (about 5k claims) a run page carries its totals, scatter and
# gold panel; beyond, each is an aggregate over the whole run (~0.1 s for its totals at
# 10k answers on PostgreSQL, ~0.5 s for the scatter) and loads by htmx after the page.
RUN_INLINE_MAX_ANSWERS = 1_000
# Offline methods only: embeddings/llm call a model and belong to the CLI (score --match-method).
GOLD_PAGE_METHODS = ("ngram", "substring")


def project_for(request: HttpRequest, project_slug: str, action: str = permissions.READ) -> Project:
    """The project named in the URL if the user may see it, else 404; 403 when
    their role may not do ``action`` there (``permissions.may``). One query."""
    project = get_object_or_404(permissions.visible_projects(user=request.user), slug=project_slug)
    _check_role(project.my_role, action, project)
    project.may_label = permissions.may(project.my_role, permissions.LABEL)
    project.may_lead = permissions.may(project.my_role, permissions.LEAD)
    return project


def run_for(request: HttpRequest, project_slug: str, run_name: str, action: str = permissions.READ) -> Run:
    """The run named in the URL, in a project the user may see, else 404; 403
    when their role may not do ``action`` there (``permissions.may``). One query."""
    run = permissions.visible_run(user=request.user, project_slug=project_slug, run_name=run_name)
    if run is None:
        raise Http404("No run of that name in a project you may open.")
    run.project.my_role = run.my_role
    _check_role(run.my_role, action, run.project)
    # What the run page's buttons offer: only what this user may do there.
    run.may_lead = permissions.may(run.my_role, permissions.LEAD)
    # A viewer (or a reviewer not assigned to the run) gets read-only pages: no label controls.
    run.may_label = permissions.may_on_run(run, permissions.LABEL)
    run.sees_all_labels = permissions.may_on_run(run, permissions.ALL_LABELS)
    if not permissions.may_on_run(run, action):
        if action == permissions.LABEL:
            raise PermissionDenied(f"You are not assigned to run {run.name!r}: a lead of project "
                                   f"{run.project.slug!r} assigns the reviewers of each run.")
        raise PermissionDenied(blind_refusal(run))
    return run


def blind_refusal(run: Run) -> str:
    """Why a reviewer may not open a page of ``run`` that shows everyone's labels."""
    return (f"Labeling on run {run.name!r} is blind: you see only your own labels, so its label tables, "
            "versions, exports and comparisons are for the project's leads until a lead turns blind "
            "labeling off.")


_ACTION_WORDS = {permissions.LABEL: "label claims", permissions.QUALITY: "read the reviewer dashboard"}


def _check_role(role: str | None, action: str, project: Project) -> None:
    if not permissions.may(role, action):
        raise PermissionDenied(
            f"Your role in project {project.slug!r} is {role or 'none'}: it may not do this "
            f"({_ACTION_WORDS.get(action, 'lead the project')}). Ask a lead of the project."
        )


@login_required
@require_GET
def project_list(request: HttpRequest) -> HttpResponse:
    return render(request, "labeling/project_list.html", {"projects": tallies.project_rows(user=request.user)})


@login_required
@require_GET
def project_detail(request: HttpRequest, project_slug: str) -> HttpResponse:
    project = project_for(request, project_slug)
    rows = tallies.run_rows(project=project, reviewer=request.user)
    return render(request, "labeling/project_detail.html", {
        "project": project, "rows": rows, "may_quality": permissions.may(project.my_role, permissions.QUALITY),
        "trend": charts.trend_chart(charts.trend_rows(rows)),
    })


@login_required
@require_GET
def project_summary(request: HttpRequest, project_slug: str) -> HttpResponse:
    """Every run of the project side by side, with their unweighted mean (SPEC §4.3b)."""
    project = project_for(request, project_slug)
    rule = request.GET.get("rule", DEFAULT_RULE)
    if rule not in RULES:
        rule = DEFAULT_RULE
    # A reviewer of a blind run sees that run's row from their own labels, as on its run page.
    blind = frozenset(run.pk for run in Run.objects.filter(project=project)
                      if permissions.blind_for(run, role=project.my_role))
    runs = metrics.project_summary(project, rule=rule, own_labels_runs=blind, me=request.user.username)
    return render(request, "labeling/project_summary.html", {
        "project": project, "runs": runs, "mean": mean_row(runs), "rule": rule, "rules": RULES,
        "blind": bool(blind),
    })


@login_required
@require_GET
def run_detail(request: HttpRequest, project_slug: str, run_name: str) -> HttpResponse:
    run = run_for(request, project_slug, run_name)
    answer_filter = request.GET.get("filter", "")
    if answer_filter not in screen.ANSWER_FILTERS:
        answer_filter = ""
    page = screen.answer_page(run=run, reviewer=request.user, answer_filter=answer_filter,
                                 page_number=request.GET.get("page", 1))
    answers = page.page.paginator.count if not answer_filter else tallies.run_answer_count(run=run)
    inline = answers <= RUN_INLINE_MAX_ANSWERS
    answer_counts = tallies.run_answer_counts(run=run, reviewer=request.user) if inline else None
    counts = tallies.total_counts(answer_counts) if inline else None
    has_gold = metrics.run_has_gold(run)
    gold = _gold_context(request, run) if has_gold and inline else None
    scatter_metrics = gold["claims"] if gold else None
    if scatter_metrics is None and inline and not run.sees_all_labels:
        # A blind reviewer's scatter comes from their own labels, as their totals do.
        scatter_metrics = metrics.run_scores(run, reviewer=request.user.username).claims
    # The gold panel scored the run already: the scatter reuses its claim metrics.
    scatter = charts.run_scatter(run, metrics=scatter_metrics) if inline else None
    # Large runs show their reviewers on the reviewers page only (three aggregates over the run).
    team = assignments.run_reviewers(run=run) if inline else None
    judged = (metrics.run_judgments(run, reviewer=None if run.sees_all_labels else request.user.username)
              if inline else None)
    may_quality = permissions.may(run.my_role, permissions.QUALITY)
    # Reviewer quality (SPEC §4.4): open send-backs (the reviewer's own: Start labeling takes them there
    # first) and gold claims in one query; flags under the rule for leads and viewers.
    page_counts = quality.run_page_counts(run=run, reviewer=request.user) if may_quality or run.may_label else None
    run.my_send_backs = page_counts[1] if page_counts is not None and run.may_label else 0
    return render(request, "labeling/run_detail.html", {
        "quality": quality.run_quality_summary(run=run, counts=page_counts) if may_quality else None,
        "may_quality": may_quality,
        "judged": judged,
        "intervals": _run_intervals(answer_counts, judged) if inline else None,
        "team": team,
        "project": run.project, "run": run, "counts": counts, "answers": page, "filters": screen.ANSWER_FILTERS,
        "filter_title": screen.ANSWER_FILTERS.get(answer_filter, ""),
        "scatter": scatter, "has_gold": has_gold, "gold": gold,
        "can_manage_run": run_manage_allowed(user=request.user, run=run),
    })


@login_required
@require_GET
def run_summary(request: HtmxHttpRequest, project_slug: str, run_name: str) -> HttpResponse:
    """The run's totals (progress, coverage, support, gap) alone: the lazy part of a
    large run's page (htmx fragment), or a page without JS."""
    run = run_for(request, project_slug, run_name)
    answer_counts = tallies.run_answer_counts(run=run, reviewer=request.user)
    context = {"project": run.project, "run": run, "counts": tallies.total_counts(answer_counts),
               "intervals": _run_intervals(answer_counts, None)}
    if request.htmx:
        # With the "Start labeling" button out of band: it depends on the totals too.
        return render(request, "labeling/run_detail.html#run-summary-swap", context)
    return render(request, "labeling/run_summary.html", context)


def _run_intervals(answer_counts: list[tallies.ClaimCounts], judged: JudgmentMetrics | None) -> dict:
    """The run page's figures with their intervals and label budgets (SPEC §4.5): coverage,
    support, gap and supported rate from the per-answer counts, and the judged citation
    precision when the run has judgments."""
    intervals = tallies.claim_count_intervals(answer_counts)
    if judged is not None:
        could_be_judged = sum(1 for counts in answer_counts if counts.cited)
        intervals["judged_precision"] = figure_interval(
            "judged_precision", judged.units(available=could_be_judged)["judged_precision"])
    return intervals


class GoldThresholdForm(forms.Form):
    """The gold panel's n-gram threshold: a finite number in [0, 1] (SPEC §4.3, ``ngram``); blank: the default."""

    threshold = forms.FloatField(required=False, min_value=0.0, max_value=1.0)


def _gold_context(request: HttpRequest, run: Run) -> dict:
    """Gold panel context for ``run`` with the match method and threshold of the query string.

    A threshold that is not a number from 0 to 1 (``nan``, ``inf``, ``-1``,
    ``2``, text) is not used: the panel says why and shows the default."""
    method = request.GET.get("match", DEFAULT_MATCH_METHOD)
    if method not in GOLD_PAGE_METHODS:
        method = DEFAULT_MATCH_METHOD
    threshold, error = None, ""
    if method == "ngram" and request.GET.get("threshold"):
        form = GoldThresholdForm({"threshold": request.GET["threshold"]})
        if form.is_valid():
            threshold = form.cleaned_data["threshold"]
        else:
            shown = request.GET["threshold"][:40]
            error = (f"The n-gram threshold {shown!r} is not a number from 0 to 1: "
                     f"the figures use the default, {DEFAULT_NGRAM_THRESHOLD:g}.")
    scores = metrics.run_scores(run, match_method=method, match_threshold=threshold,
                                reviewer=request.user.username if not run.sees_all_labels else None)
    return {"rows": metrics.gold_rows(scores), "claims": scores.claims, "method": method, "threshold": threshold,
            "methods": GOLD_PAGE_METHODS, "pending": scores.gold.context.pending if scores.gold else 0,
            "error": error}


@login_required
@require_GET
def run_gold(request: HtmxHttpRequest, project_slug: str, run_name: str) -> HttpResponse:
    """The run's gold-based metrics alone (SPEC §4.2–§4.3): htmx fragment, or a page without JS."""
    run = run_for(request, project_slug, run_name)
    context = {"project": run.project, "run": run, "gold": _gold_context(request, run)}
    if request.htmx:
        return render(request, "labeling/run_detail.html#run-gold", context)
    return render(request, "labeling/run_gold.html", context)


@login_required
@require_GET
def run_scatter(request: HtmxHttpRequest, project_slug: str, run_name: str) -> HttpResponse:
    """The run's coverage × support scatter alone (lazy part of the run page; a page without JS)."""
    run = run_for(request, project_slug, run_name)
    # A blind reviewer's scatter comes from their own labels.
    viewer = None if run.sees_all_labels else request.user.username

    def chart() -> charts.ScatterChart:
        own = metrics.run_scores(run, reviewer=viewer).claims if viewer is not None else None
        return charts.run_scatter(run, metrics=own)

    # Computed once per label state of the run (SPEC §7); its links name the project.
    context = {"project": run.project, "run": run,
               "chart": cached_figure("scatter", run, chart, parts=(viewer, run.project.slug),
                                        state=run_state_of(run))}
    if request.htmx:
        return render(request, "labeling/run_detail.html#run-scatter", context)
    return render(request, "labeling/run_scatter.html", context)


def review_url(run: Run, answer_id: int, claim_id: int | None = None) -> str:
    """URL of the review page of an answer, optionally on one claim."""
    url = reverse("answer_review", kwargs={
        "project_slug": run.project.slug, "run_name": run.name, "answer_id": answer_id,
    })
    return f"{url}?claim={claim_id}" if claim_id is not None else url
