"""Judge runs (SPEC §4.4) over the API: start one (lead), follow it until it
has finished — what a CI job waits for before it reads the run's estimate."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.http import HttpRequest
from ninja import Router
from ninja.errors import HttpError
from ninja.responses import Status
from pydantic import Field

from labeling import permissions
from labeling.api.access import FieldRefused, access_of, run_of
from labeling.api.schemas import Body, Error, ErrorList, JudgeRunOut, judge_run_out
from labeling.judges.protocol import DEFAULT_TEMPERATURE, JudgeEndpoint, base_url_from_env
from labeling.judges.runs import judge_run_create, judge_run_enqueue
from labeling.models import JudgeRun, Reviewer, Run

router = Router(tags=["judges"])


class JudgeRunIn(Body):
    judge: str = Field(description="the judge's reviewer name (kind model; created if new)")
    model: str = Field(description="the model to ask, e.g. gpt-4o-mini")
    base_url: str = Field("", description="an OpenAI-compatible endpoint (default: CITELAB_OPENAI_BASE_URL)")
    answer_limit: int | None = Field(None, ge=1, description="ask about at most this many answers")


def judge_runs_start(*, runs: list[Run], judge: str, model: str, base_url: str, answer_limit: int | None,
                     started_by: Reviewer) -> list[JudgeRun]:
    """Record a judge run of ``judge`` on each of ``runs`` (``judge_run_create``) and hand
    them to the task queue once the caller's transaction commits. Raises ValidationError."""
    endpoint = JudgeEndpoint(model=model, base_url=base_url.strip() or base_url_from_env(),
                             temperature=DEFAULT_TEMPERATURE)
    started = [judge_run_create(run=run, reviewer_name=judge, endpoint=endpoint, answer_limit=answer_limit,
                                started_by=started_by) for run in runs]
    for judge_run in started:
        transaction.on_commit(lambda judge_run=judge_run: judge_run_enqueue(judge_run))
    return started


@router.get("/projects/{slug}/runs/{run}/judge-runs", response={200: list[JudgeRunOut], 404: Error},
            url_name="judge_run_list")
def judge_run_list(request: HttpRequest, slug: str, run: str) -> list[dict[str, Any]]:
    """The run's judge runs, oldest first."""
    target = run_of(request, slug, run)
    return [judge_run_out(jr) for jr in target.judge_runs.select_related("run", "reviewer").order_by("id")]


@router.post("/projects/{slug}/runs/{run}/judge-runs",
             response={202: JudgeRunOut, 403: Error, 404: Error, 422: ErrorList}, url_name="judge_run_start")
def judge_run_start(request: HttpRequest, slug: str, run: str, body: JudgeRunIn) -> Status:
    """Start a judge on the run's cited claims (lead): queued on the task queue (a worker, `manage.py
    qcluster`, carries it out); follow it with `GET …/judge-runs/{id}` until `finished`."""
    target = run_of(request, slug, run, permissions.LEAD)
    if not body.model.strip():
        raise FieldRefused("model", "name the model to ask (e.g. gpt-4o-mini, or the model your server serves)")
    try:
        with transaction.atomic():
            (judge_run,) = judge_runs_start(runs=[target], judge=body.judge, model=body.model,
                                            base_url=body.base_url, answer_limit=body.answer_limit,
                                            started_by=access_of(request).reviewer)
    except ValidationError as exc:
        raise FieldRefused("judge", " ".join(exc.messages)) from None
    judge_run.refresh_from_db()
    return Status(202, judge_run_out(judge_run))


@router.get("/projects/{slug}/runs/{run}/judge-runs/{int:judge_run_id}",
            response={200: JudgeRunOut, 404: Error}, url_name="judge_run_detail")
def judge_run_detail(request: HttpRequest, slug: str, run: str, judge_run_id: int) -> dict[str, Any]:
    target = run_of(request, slug, run)
    judge_run = JudgeRun.objects.select_related("run", "reviewer").filter(run=target, pk=judge_run_id).first()
    if judge_run is None:
        raise HttpError(404, f"Run {target.name!r} has no judge run {judge_run_id}.")
    return judge_run_out(judge_run)
