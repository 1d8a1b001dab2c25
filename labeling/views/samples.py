"""A run's probability sample and its estimates (SPEC §4.6): the run
page's panel (the judge-assisted estimate as the headline, the sample's
progress, the label budget) and a lead's forms to draw or grow the sample and
to set its target half-width."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_GET, require_POST

from labeling.models import Run
from labeling.permissions import ALL_LABELS, LEAD
from labeling.scores import estimates, samples
from labeling.views.htmx import HtmxHttpRequest, page_or_partial
from labeling.views.params import int_param
from labeling.views.projects import run_for


def _panel_context(run: Run, *, judge_name: str | None = None, error: str = "", form: dict | None = None) -> dict:
    judge_error = ""
    try:
        judge = estimates.pick_judge(run, judge_name)
    except estimates.EstimateError as exc:
        judge, judge_error = None, str(exc)
    est = estimates.run_estimates(run, judge=judge)
    status = est.sample if est is not None else None
    return {
        "project": run.project, "run": run, "status": status, "est": est, "error": error,
        "judge_error": judge_error, "judges": estimates.run_judges(run) if judge_error else [],
        "budgets": est.budgets() if est is not None else [],
        "form": form or {"answers": "", "seed": "",
                         "target": f"{status.target_half_width:g}" if status and status.target_half_width else ""},
    }


def _panel(request: HtmxHttpRequest, run: Run, **extra) -> HttpResponse:
    context = _panel_context(run, judge_name=request.GET.get("judge") or None, **extra)
    return page_or_partial(request, "labeling/run_sample.html", "run-sample", context)


@login_required
@require_GET
def run_sample_panel(request: HtmxHttpRequest, project_slug: str, run_name: str) -> HttpResponse:
    """The run page's sample and estimates panel (htmx fragment), or a page of its own."""
    # The estimates use a judge's labels: not for a reviewer who labels the run blind.
    return _panel(request, run_for(request, project_slug, run_name, ALL_LABELS))


def _after_post(request: HtmxHttpRequest, run: Run, *, notice: str = "", error: str = "",
                form: dict | None = None) -> HttpResponse:
    if request.htmx:
        return _panel(request, run, error=error, form=form)
    if error:
        messages.error(request, error)
    else:
        messages.success(request, notice)
    return redirect("run_sample", project_slug=run.project.slug, run_name=run.name)


@login_required
@require_POST
def run_sample_draw(request: HtmxHttpRequest, project_slug: str, run_name: str) -> HttpResponse:
    """A lead draws the run's sample of N answers (seed optional), or grows it to N."""
    run = run_for(request, project_slug, run_name, LEAD)
    form = {key: request.POST.get(key, "").strip() for key in ("answers", "seed")}
    answers = int_param(form["answers"])
    seed = int(form["seed"]) if form["seed"].isascii() and form["seed"].isdigit() else None
    if answers is None:
        return _after_post(request, run, form=form,
                           error=f"Answers: {form['answers']!r} is not a whole number of answers (1 or more).")
    if form["seed"] and seed is None:
        return _after_post(request, run, form=form, error=f"Seed: {form['seed']!r} is not a whole number.")
    try:
        result = samples.sample_draw(run=run, answers=answers, seed=seed, actor=request.user)
    except ValidationError as exc:
        return _after_post(request, run, form=form, error=" ".join(
            f"{field.capitalize()}: {message}" for field, items in exc.message_dict.items() for message in items))
    return _after_post(request, run, notice=f"The sample holds {result.size} answers ({result.added} drawn now, "
                                            f"seed {result.sample.seed}).")


@login_required
@require_POST
def run_sample_target(request: HtmxHttpRequest, project_slug: str, run_name: str) -> HttpResponse:
    """A lead sets (or, blank, clears) the target half-width of the sample's support estimate."""
    run = run_for(request, project_slug, run_name, LEAD)
    typed = request.POST.get("target", "").strip()
    try:
        half_width = float(typed) if typed else None
    except ValueError:
        half_width = None
        error = f"Target: {typed!r} is not a number (a half-width such as 0.03)."
    else:
        error = ""
    if not error:
        try:
            samples.sample_target_set(run=run, half_width=half_width, actor=request.user)
        except ValidationError as exc:
            error = " ".join(f"{'Target' if field == 'target_half_width' else 'Sample'}: {message}"
                             for field, items in exc.message_dict.items() for message in items)
    if error:
        return _after_post(request, run, error=error, form={"answers": "", "seed": "", "target": typed})
    return _after_post(request, run, notice=f"Target half-width ±{half_width:g}." if half_width is not None
                       else "No target half-width.")
