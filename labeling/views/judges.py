"""A run's judges (automated labelers, SPEC §4.4): the judges panel of the run
page (each judge, its latest judge run with a progress bar that polls while
it runs, and a lead's form to start one) and the grading page of one judge."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from labeling.judges import grades as judge_grades
from labeling.judges.protocol import DEFAULT_TEMPERATURE, JudgeEndpoint, base_url_from_env
from labeling.judges.runs import (
    ACTIVE,
    browser_endpoints,
    judge_run_create,
    judge_run_enqueue,
    run_judge_promote,
    run_queue_judge_set,
)
from labeling.models import Answer, Claim, JudgeRun, Reviewer, ReviewerKind
from labeling.names import normalize_name
from labeling.permissions import ALL_LABELS, LEAD
from labeling.scores.figure_cache import cached_figure, run_state_of
from labeling.team.agreement import verdict
from labeling.views.htmx import HtmxHttpRequest, page_or_partial
from labeling.views.projects import run_for
from scoring.judge_grading import CATEGORIES, LONG_CITED_CHARS, JudgeGrade
from scoring.ratio import format_value

DISAGREEMENTS_PER_PAGE = 50


@dataclass(frozen=True)
class Cell:
    count: int
    percent: int  # share of the graded claims, rounded as format_value does (half away from zero)
    level: int
    agree: bool


def confusion_rows(grade: JudgeGrade) -> list[tuple[str, list[Cell]]]:
    """The grade's confusion matrix as shaded cells (level 0–5 by share of n), as the agreement page draws it."""
    rows = []
    for row in CATEGORIES:
        cells = []
        for col in CATEGORIES:
            count = int(grade.confusion.at[row, col])
            share = count / grade.n if grade.n else 0.0
            level = 0 if count == 0 else max(1, round(share * 5))
            cells.append(Cell(count, int(format_value(share * 100, 0)), level, row == col))
        rows.append((row, cells))
    return rows


def _judge_for(name: str) -> Reviewer:
    judge = Reviewer.objects.filter(username=normalize_name(name), kind=ReviewerKind.MODEL).first()
    if judge is None:
        raise Http404("no judge of that name")
    return judge


class _Disagreements:
    """A grade's disagreements as the paginator reads them: their number, then the
    rows of one page as dicts (``JudgeGrade.disagreement_records``), not all 4k."""

    def __init__(self, grade) -> None:
        self.grade = grade

    def __len__(self) -> int:
        return len(self.grade.disagreements)

    def __getitem__(self, part: slice) -> list[dict]:
        return self.grade.disagreement_records(part.start or 0, part.stop)


@login_required
@require_GET
def judge_grade_page(request: HttpRequest, project_slug: str, run_name: str, judge_name: str) -> HttpResponse:
    # The judge's labels beside the humans': not for a reviewer who labels the run blind.
    run = run_for(request, project_slug, run_name, ALL_LABELS)
    judge = _judge_for(judge_name)

    def grades() -> tuple:
        claims = judge_grades.texts_of(run)  # the disagreements' texts only
        return (judge_grades.run_judge_grade(run=run, judge=judge, claims=claims),
                judge_grades.judge_self_agreement(run=run, judge=judge, claims=claims))

    # Computed once per label state of the run (SPEC §7).
    grade, self_agreement = cached_figure("judge_grade", run, grades, parts=(judge.pk, judge.username, judge.kind),
                                             state=run_state_of(run))
    page = Paginator(_Disagreements(grade), DISAGREEMENTS_PER_PAGE).get_page(request.GET.get("page"))
    answer_ids = dict(Claim.objects.filter(pk__in=[row["claim_id"] for row in page.object_list])
                      .values_list("pk", "answer_id"))
    questions = dict(Answer.objects.filter(pk__in=set(answer_ids.values())).values_list("pk", "question_key"))
    for row in page.object_list:
        row["answer_id"] = answer_ids.get(row["claim_id"])
        row["question_id"] = questions.get(row["answer_id"], "")
    judge_runs = list(JudgeRun.objects.filter(run=run, reviewer=judge).order_by("-created_at", "-id"))
    return render(request, "labeling/judge_grade.html", {
        "project": run.project, "run": run, "judge": judge, "grade": grade, "kappa_verdict": verdict(grade.kappa),
        "confusion": confusion_rows(grade), "self_agreement": self_agreement,
        "self_verdict": verdict(self_agreement.kappa) if self_agreement else None,
        "self_confusion": confusion_rows(self_agreement) if self_agreement else None,
        "page": page, "judge_runs": judge_runs, "long_cited_chars": LONG_CITED_CHARS,
        "promoted": run.promoted_judge_id == judge.pk,
    })


# The run page's judges panel as htmx swaps it in (the page without JS: run_judges.html).
PANEL = "labeling/run_judges.html#run-judges"


def _panel_context(request: HttpRequest, run, *, error: str = "", form: dict | None = None) -> dict:
    rows = judge_grades.run_judges(run=run)
    return {
        "project": run.project, "run": run, "judges": rows, "error": error,
        "form": form or {"reviewer": "", "model": "", "base_url": base_url_from_env(), "limit": ""},
        "active": any(row.latest is not None and row.latest.status in ACTIVE for row in rows),
        "endpoints": [url for url in browser_endpoints() if url],
    }


@login_required
@require_GET
def run_judges_panel(request: HtmxHttpRequest, project_slug: str, run_name: str) -> HttpResponse:
    """The run page's judges panel (htmx fragment, polled while a judge run is
    active), or a page of its own without JS."""
    run = run_for(request, project_slug, run_name, ALL_LABELS)
    return page_or_partial(request, "labeling/run_judges.html", "run-judges", _panel_context(request, run))


@login_required
@require_POST
def judge_run_start(request: HtmxHttpRequest, project_slug: str, run_name: str) -> HttpResponse:
    """A lead starts a judge run: recorded, then handed to the task queue."""
    run = run_for(request, project_slug, run_name, LEAD)
    form = {key: request.POST.get(key, "").strip() for key in ("reviewer", "model", "base_url", "limit")}
    try:
        # A limit of 10,000 digits or more is refused by int() itself (ValueError): no time spent on it.
        limit = int(form["limit"]) if form["limit"] else None
    except ValueError:
        limit = None
        error = f"The answer limit {form['limit'][:40]!r} is not a whole number."
    else:
        error = ""
    if not error:
        try:
            judge_run = judge_run_create(
                run=run, reviewer_name=form["reviewer"], answer_limit=limit, started_by=request.user,
                endpoint=JudgeEndpoint(model=form["model"], base_url=form["base_url"] or base_url_from_env(),
                                       temperature=DEFAULT_TEMPERATURE))
        except ValidationError as exc:
            error = " ".join(exc.messages)
    if error:
        if request.htmx:
            return render(request, PANEL, _panel_context(request, run, error=error, form=form))
        messages.error(request, error)
        return redirect("run_judges", project_slug=run.project.slug, run_name=run.name)
    judge_run_enqueue(judge_run)
    if request.htmx:
        return render(request, PANEL, _panel_context(request, run))
    messages.success(request, f"Judge {judge_run.reviewer.username} started on {judge_run.answers_total} answers.")
    return redirect("run_judges", project_slug=run.project.slug, run_name=run.name)


def _judge_or_none(value: str) -> Reviewer | None:
    return _judge_for(value) if value else None


@login_required
@require_POST
def run_judge_promote_view(request: HttpRequest, project_slug: str, run_name: str) -> HttpResponse:
    """A lead promotes a judge for the run (its labels count as a human's) or demotes it (``judge`` empty)."""
    run = run_for(request, project_slug, run_name, LEAD)
    judge = _judge_or_none(request.POST.get("judge", "").strip())
    try:
        run_judge_promote(run=run, judge=judge)
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
    else:
        messages.success(request, f"Judge {judge.username} now counts as a human reviewer on this run." if judge
                         else "No judge counts as a human reviewer on this run any more.")
    target = request.POST.get("next_judge") or (judge.username if judge else "")
    if target:
        return redirect("judge_grade", project_slug=run.project.slug, run_name=run.name, judge_name=target)
    return redirect(run.get_absolute_url())


@login_required
@require_POST
def run_queue_judge_view(request: HtmxHttpRequest, project_slug: str, run_name: str) -> HttpResponse:
    """A lead sorts each answer's claims in the queue by a judge's verdict (UNSUPPORTED first), or stops."""
    run = run_for(request, project_slug, run_name, LEAD)
    try:
        run_queue_judge_set(run=run, judge=_judge_or_none(request.POST.get("judge", "").strip()))
    except ValidationError as exc:
        if request.htmx:
            context = _panel_context(request, run, error=" ".join(exc.messages))
            return render(request, PANEL, context)
        messages.error(request, " ".join(exc.messages))
    if request.htmx:
        return render(request, PANEL, _panel_context(request, run))
    return redirect("run_judges", project_slug=run.project.slug, run_name=run.name)
