"""Projects, runs (list, create, rename, delete) and answers imports."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Count
from django.http import HttpRequest
from ninja import Query, Router, Schema
from ninja.responses import Status
from pydantic import Field

from labeling import permissions, runs
from labeling.api.access import FieldRefused, access_of, project_of, run_of
from labeling.api.judges import judge_runs_start
from labeling.api.pages import PageIn, page_of, paged
from labeling.api.schemas import (
    Error,
    ErrorList,
    ImportOut,
    ProjectOut,
    RunCreateIn,
    RunOut,
    RunRenameIn,
    judge_run_out,
    run_out,
)
from labeling.importers.answers import FORMATS, answers_format
from labeling.importers.load import DEFAULT_IMPORT_REVIEWER, run_import
from labeling.models import JudgeRun, Question, Run
from labeling.names import clean, validate_reviewer_name, validate_run_name
from labeling.review import tallies

router = Router(tags=["projects and runs"])

_CONTENT_FORMATS = {"text/csv": "csv", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": "xlsx",
                    "application/x-ndjson": "jsonl", "application/jsonl": "jsonl", "application/json": "jsonl"}


@router.get("/projects", response=list[ProjectOut], url_name="project_list")
def project_list(request: HttpRequest) -> list[dict[str, Any]]:
    """The projects this token opens: its own."""
    access = access_of(request)
    return [_project_out(access.project, access.role)]


@router.get("/projects/{slug}", response={200: ProjectOut, 404: Error}, url_name="project_detail")
def project_detail(request: HttpRequest, slug: str) -> dict[str, Any]:
    project = project_of(request, slug)
    return _project_out(project, access_of(request).role)


def _project_out(project, role: str) -> dict[str, Any]:
    return {"slug": project.slug, "name": project.name, "description": project.description, "role": role,
            "runs": Run.objects.filter(project=project).count(),
            "questions": Question.objects.filter(project=project).count()}


@router.get("/projects/{slug}/runs", response={200: page_of(RunOut), 404: Error}, url_name="run_list")
def run_list(request: HttpRequest, slug: str, page: Query[PageIn]) -> dict[str, Any]:
    """The project's runs, oldest first, each with its number of answers."""
    project = project_of(request, slug)
    runs = Run.objects.filter(project=project).annotate(n_answers=Count("answers")).order_by("created_at", "id")
    return paged(runs, page, lambda run: run_out(run, answers=run.n_answers))


@router.post("/projects/{slug}/runs", response={201: RunOut, 403: Error, 404: Error, 422: ErrorList},
             url_name="run_create")
def run_create(request: HttpRequest, slug: str, body: RunCreateIn) -> Status:
    """Create an empty run (lead); import its answers with `POST /projects/{slug}/answers?run=NAME`."""
    access = access_of(request)
    project = project_of(request, slug, permissions.LEAD)
    project.my_role = access.role
    try:
        run = runs.run_create(project=project, user=access.reviewer, name=body.name, metadata=body.metadata)
    except ValidationError as exc:
        raise FieldRefused("metadata" if exc.code == "bad_metadata" else "name", " ".join(exc.messages)) from None
    return Status(201, run_out(run, answers=0))


@router.get("/projects/{slug}/runs/{run}", response={200: RunOut, 404: Error}, url_name="run_detail")
def run_detail(request: HttpRequest, slug: str, run: str) -> dict[str, Any]:
    target = run_of(request, slug, run)
    return run_out(target, answers=tallies.run_answer_count(run=target))


@router.patch("/projects/{slug}/runs/{run}", response={200: RunOut, 403: Error, 404: Error, 422: ErrorList},
              url_name="run_rename")
def run_rename(request: HttpRequest, slug: str, run: str, body: RunRenameIn) -> dict[str, Any]:
    """Rename the run (lead); its answers, labels and versions stay with it."""
    target = run_of(request, slug, run, permissions.LEAD)
    try:
        renamed = runs.run_rename(run=target, user=access_of(request).reviewer, name=body.name)
    except ValidationError as exc:
        raise FieldRefused("name", " ".join(exc.messages)) from None
    return run_out(renamed, answers=tallies.run_answer_count(run=renamed))


class DeletedOut(Schema):
    deleted: str
    answers: int
    claims: int
    labels: int
    current_labels: int
    versions: int


@router.delete("/projects/{slug}/runs/{run}", response={200: DeletedOut, 403: Error, 404: Error},
               url_name="run_delete")
def run_delete(request: HttpRequest, slug: str, run: str) -> dict[str, Any]:
    """Delete the run with its answers, claims, labels and version records (lead), all or nothing; the
    versions' files stay in storage."""
    target = run_of(request, slug, run, permissions.LEAD)
    contents = runs.run_delete(run=target, user=access_of(request).reviewer)
    return {"deleted": target.name, **contents.__dict__}


class ImportParams(Schema):
    run: str | None = Field(None, description="run name for every answer (overrides the file's `run`)")
    format: str | None = Field(None, description="jsonl, csv or xlsx (default: from the file name or the "
                                                 "Content-Type, else jsonl)")
    reviewer: str = Field(DEFAULT_IMPORT_REVIEWER, description="imported reviewer credited with labels given "
                                                               "without one")
    judge: str | None = Field(None, description="then start this judge (kind model) on each imported run, with "
                                                "`model`: all or nothing with the import")
    model: str | None = Field(None, description="the judge's model (with `judge`); its endpoint is "
                                                "CITELAB_OPENAI_BASE_URL")


_IMPORT_BODY = {
    "requestBody": {
        "required": True,
        "description": "The answers file (SPEC §6), as the raw body or as the `file` field of a multipart form.",
        "content": {
            "application/x-ndjson": {"schema": {"type": "string", "format": "binary"}},
            "text/csv": {"schema": {"type": "string", "format": "binary"}},
            "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": {
                "schema": {"type": "string", "format": "binary"}},
            "multipart/form-data": {"schema": {"type": "object", "properties": {
                "file": {"type": "string", "format": "binary"}}, "required": ["file"]}},
        },
    },
}


@router.post("/projects/{slug}/answers", response={200: ImportOut, 201: ImportOut, 403: Error, 404: Error,
                                                   413: ErrorList, 422: ErrorList},
             url_name="answers_import", openapi_extra=_IMPORT_BODY)
def answers_import(request: HttpRequest, slug: str, params: Query[ImportParams]) -> Status:
    """Import an answers file (lead): JSON Lines, CSV or XLSX, all or nothing. A bad file answers 422
    with every problem (`line`, `field`, `reason`) and imports nothing; re-importing changes nothing
    (200). Runs named in the file are created."""
    access = access_of(request)
    project = project_of(request, slug, permissions.LEAD)
    data, filename, content_type = _upload(request)
    fmt = params.format
    if fmt is None:
        if filename:
            try:
                fmt = answers_format(filename)
            except ValueError as exc:
                raise FieldRefused("file", str(exc)) from None
        else:
            fmt = _CONTENT_FORMATS.get(content_type, "jsonl")
    if fmt not in FORMATS:
        raise FieldRefused("format", f"{fmt!r} is not one of {', '.join(FORMATS)}")
    if (params.judge is None) != (params.model is None):
        raise FieldRefused("model" if params.model is None else "judge", "give `judge` and `model` together")
    if params.model is not None and not params.model.strip():
        raise FieldRefused("model", "name the model to ask")
    # The names the import checks, refused here with their field.
    for field, value, rule in (("run", params.run, validate_run_name), ("reviewer", params.reviewer,
                                                                        validate_reviewer_name)):
        try:
            if value is not None:
                clean(value, rule)
        except ValidationError as exc:
            raise FieldRefused(field, " ".join(exc.messages)) from None
    with transaction.atomic():
        report = run_import(project=project, source=data, format=fmt, run_name=params.run,
                            default_reviewer=params.reviewer, actor=access.reviewer,
                            source_name=filename or f"API upload ({fmt})")
        judge_runs = []
        if params.judge is not None:
            runs = list(Run.objects.filter(project=project, name__in=report.runs).select_related("project"))
            try:
                judge_runs = judge_runs_start(runs=runs, judge=params.judge, model=params.model, base_url="",
                                              answer_limit=None, started_by=access.reviewer)
            except ValidationError as exc:
                # Raised inside the transaction: the import is rolled back with it.
                raise FieldRefused("judge", " ".join(exc.messages)) from None
    body = {key: getattr(report, key) for key in ("runs", "questions_created", "answers_created",
                                                   "answers_unchanged", "claims_created", "citations_created",
                                                   "fabricated_citations", "labels_created", "judgments_created")}
    body |= {"summary": report.summary(),
             "warnings": [{"line": w.line, "field": w.field, "reason": w.reason} for w in report.warnings],
             "judge_runs": [judge_run_out(JudgeRun.objects.select_related("run", "reviewer").get(pk=jr.pk))
                            for jr in judge_runs]}
    return Status(201 if report.answers_created else 200, body)


def _upload(request: HttpRequest) -> tuple[bytes, str, str]:
    """The uploaded file's bytes, its name (multipart only) and the body's
    content type. 413 from the announced length, before anything is read."""
    limit = settings.CITELAB_MAX_UPLOAD_BYTES
    try:
        declared = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        declared = 0
    content_type = (request.content_type or "").lower()
    if declared > limit + (16 * 1024 if content_type == "multipart/form-data" else 0):
        raise FieldRefused("body", f"the upload is {declared:,} bytes; the limit is {limit:,} (CITELAB_MAX_UPLOAD_MB):"
                                   " nothing was imported", status=413)
    if content_type == "multipart/form-data":
        upload = request.FILES.get("file")
        if upload is None:
            raise FieldRefused("file", "send the answers file as the form field `file`")
        if upload.size > limit:
            raise FieldRefused("file", f"{upload.name} is {upload.size:,} bytes; the limit is {limit:,}", status=413)
        return upload.read(), upload.name, content_type
    data = request.read(limit + 1)
    if len(data) > limit:
        raise FieldRefused("body", f"the upload is over the limit of {limit:,} bytes (CITELAB_MAX_UPLOAD_MB): "
                                   "nothing was imported", status=413)
    if not data:
        raise FieldRefused("body", "the body is empty: send the answers file as the request body")
    return data, "", content_type
