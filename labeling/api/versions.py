"""Label table versions: list, save (``label_table_snapshot``), read, download."""

from __future__ import annotations

import tempfile
from typing import Any

from django.core.exceptions import ValidationError
from django.http import FileResponse, HttpRequest, HttpResponse
from django.utils.http import content_disposition_header
from ninja import Query, Router, Schema
from ninja.errors import HttpError
from ninja.responses import Status
from pydantic import Field

from labeling import permissions
from labeling.api.access import FieldRefused, access_of, run_of
from labeling.api.schemas import Error, ErrorList, VersionCreateIn, VersionOut, version_out
from labeling.audit import audit_record
from labeling.models import AuditAction, LabelTableVersion, Run
from labeling.tables.export import CONTENT_TYPES, EXPORT_FORMATS, export_filename, label_table_export
from labeling.tables.versions import SNAPSHOT_UNCHANGED, VersionIntegrityError, label_table_snapshot, version_read

router = Router(tags=["label table versions"])


def _version(run: Run, number: int) -> LabelTableVersion:
    version = LabelTableVersion.objects.select_related("author").filter(run=run, number=number).first()
    if version is None:
        raise HttpError(404, f"Run {run.name!r} has no version {number}.")
    return version


@router.get("/projects/{slug}/runs/{run}/versions", response={200: list[VersionOut], 403: Error, 404: Error},
            url_name="version_list")
def version_list(request: HttpRequest, slug: str, run: str) -> list[dict[str, Any]]:
    """The run's saved versions, oldest first (every reviewer's labels: not on a blind run for a reviewer)."""
    target = run_of(request, slug, run, permissions.ALL_LABELS)
    return [version_out(v) for v in target.versions.select_related("author").order_by("number")]


@router.post("/projects/{slug}/runs/{run}/versions",
             response={201: VersionOut, 403: Error, 404: Error, 409: Error, 422: ErrorList},
             url_name="version_create")
def version_create(request: HttpRequest, slug: str, run: str, body: VersionCreateIn) -> Status:
    """Save the run's current label table as its next version (lead). A table unchanged since the latest
    version is 409, nothing saved."""
    target = run_of(request, slug, run, permissions.LEAD)
    try:
        version = label_table_snapshot(run=target, author=access_of(request).reviewer, note=body.note)
    except ValidationError as exc:
        if exc.code == SNAPSHOT_UNCHANGED:
            raise HttpError(409, exc.messages[0]) from None
        raise FieldRefused("note", exc.messages[0]) from None
    return Status(201, version_out(version))


@router.get("/projects/{slug}/runs/{run}/versions/{int:number}", response={200: VersionOut, 403: Error, 404: Error},
            url_name="version_detail")
def version_detail(request: HttpRequest, slug: str, run: str, number: int) -> dict[str, Any]:
    target = run_of(request, slug, run, permissions.ALL_LABELS)
    return version_out(_version(target, number))


class DownloadParams(Schema):
    format: str = Field("canonical", description="canonical (the stored JSON Lines file, whose SHA-256 is the "
                                                 "version's), xlsx, csv or jsonl (a label table export)")


@router.get("/projects/{slug}/runs/{run}/versions/{int:number}/file",
            response={200: None, 403: Error, 404: Error, 422: ErrorList, 500: Error}, url_name="version_file",
            openapi_extra={"responses": {200: {"description": "the file", "content": {
                "application/x-ndjson": {}, "text/csv": {},
                "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": {}}}}})
def version_file(request: HttpRequest, slug: str, run: str, number: int,
                 params: Query[DownloadParams]) -> HttpResponse:
    """Download the version: its canonical file, verified against its SHA-256, or an export of it (audited)."""
    target = run_of(request, slug, run, permissions.ALL_LABELS)
    version = _version(target, number)
    actor = access_of(request).reviewer
    fmt = params.format
    if fmt not in ("canonical", *EXPORT_FORMATS):
        raise FieldRefused("format", f"{fmt!r} is not one of canonical, {', '.join(EXPORT_FORMATS)}")
    try:
        if fmt == "canonical":
            data = version_read(version)
            name = export_filename(target, "jsonl", version=number).replace("_labels_", "_canonical_")
            audit_record(action=AuditAction.EXPORT, actor=actor, run=target, target=name,
                         detail={"format": "jsonl", "version": number, "canonical": True})
            response = HttpResponse(data, content_type=CONTENT_TYPES["jsonl"])
            response["Content-Disposition"] = content_disposition_header(True, name)
            return response
        handle = tempfile.TemporaryFile()
        label_table_export(run=target, fmt=fmt, out=handle, version=version, actor=actor)
    except VersionIntegrityError as exc:
        raise HttpError(500, str(exc)) from None
    handle.seek(0)
    return FileResponse(handle, as_attachment=True, filename=export_filename(target, fmt, version=number),
                        content_type=CONTENT_TYPES[fmt])
