"""Label table pages: versions (list, snapshot, diff, file), exports and the
offline-labeling import."""

from __future__ import annotations

import json
import tempfile
import uuid
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core import signing
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.defaultfilters import filesizeformat
from django.urls import reverse
from django.utils import timezone
from django.utils.http import content_disposition_header
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from labeling.audit import audit_record
from labeling.importers.label_table import label_table_format, read_label_table
from labeling.models import AuditAction, Claim, LabelTableVersion, Run
from labeling.permissions import ALL_LABELS, LEAD, may_on_run
from labeling.scores.figure_cache import cached_figure, run_state_of
from labeling.scores.metrics import run_summary_row
from labeling.tables.export import CONTENT_TYPES, EXPORT_FORMATS, export_filename, label_table_export
from labeling.tables.import_preview import LabelImportPreview, label_table_import_preview
from labeling.tables.label_import import NEWER_LABELS, LabelImportError, label_table_import_apply
from labeling.tables.versions import (
    VersionIntegrityError,
    label_table_snapshot,
    version_diff,
    version_read,
    version_scores,
)
from labeling.views.htmx import HtmxHttpRequest, page_or_partial
from labeling.views.params import int_param
from labeling.views.projects import blind_refusal
from labeling.views.projects import run_for as _run_for
from scoring.claims import ClaimMetrics

_UPLOAD_SALT = "citelab.label-import"
_UPLOAD_MAX_AGE = 24 * 3600
_UPLOAD_DIR = "label_imports"
# Room for the multipart boundaries, the CSRF token and the file name around the file itself.
_FORM_OVERHEAD_BYTES = 16 * 1024


@dataclass
class _VersionRow:
    version: LabelTableVersion
    metrics: ClaimMetrics | None
    error: str


@login_required
@require_GET
def version_list(request: HtmxHttpRequest, project_slug: str, run_name: str) -> HttpResponse:
    run = _run_for(request, project_slug, run_name, ALL_LABELS)
    versions = list(run.versions.select_related("author").order_by("-number"))
    # The current table's figures are the run's summary row, computed once per label state (SPEC §7):
    # building the whole table took 1.5 s at 50k claims. tests/test_versions.py holds them to the table's.
    current = run_summary_row(run)
    # Every claim is a row of the table (abstentions and non-factual claims too): counted once per claims version.
    table_rows = cached_figure("claim_rows", run, lambda: Claim.objects.filter(answer__run=run).count(),
                               state=run_state_of(run))
    rows = []
    for version in versions:
        try:
            rows.append(_VersionRow(version, version_scores(version), ""))
        except VersionIntegrityError as exc:
            rows.append(_VersionRow(version, None, exc.reason))
    context = {
        "project": run.project, "run": run, "rows": rows, "formats": EXPORT_FORMATS,
        "current": current, "current_rows": table_rows,
        "diff_old": versions[1].number if len(versions) > 1 else None,
        "diff_new": versions[0].number if versions else None,
    }
    return page_or_partial(request, "labeling/version_list.html", "version-table", context)


@login_required
@require_POST
def version_create(request: HttpRequest, project_slug: str, run_name: str) -> HttpResponse:
    run = _run_for(request, project_slug, run_name, LEAD)
    try:
        version = label_table_snapshot(run=run, author=request.user, note=request.POST.get("note", ""))
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
        return redirect("version_list", project_slug=project_slug, run_name=run_name)
    messages.success(request, f"Saved version {version.number}: {version.row_count} claims, "
                              f"{version.label_count} labels (SHA-256 {version.sha256[:12]}…).")
    return redirect("version_list", project_slug=project_slug, run_name=run_name)


@login_required
@require_GET
def version_file(request: HttpRequest, project_slug: str, run_name: str, number: int) -> HttpResponse:
    run = _run_for(request, project_slug, run_name, ALL_LABELS)
    version = get_object_or_404(LabelTableVersion, run=run, number=number)
    try:
        data = version_read(version)
    except VersionIntegrityError as exc:
        messages.error(request, str(exc))
        return redirect("version_list", project_slug=project_slug, run_name=run_name)
    response = HttpResponse(data, content_type=CONTENT_TYPES["jsonl"])
    name = export_filename(run, "jsonl", version=number).replace("_labels_", "_canonical_")
    audit_record(action=AuditAction.EXPORT, actor=request.user, run=run, target=name,
                 detail={"format": "jsonl", "version": number, "canonical": True})
    # RFC 6266: filename*=utf-8''… for names beyond ASCII (a run named "Prüfung – 日本").
    response["Content-Disposition"] = content_disposition_header(True, name)
    return response


@login_required
@require_GET
def version_diff_page(request: HtmxHttpRequest, project_slug: str, run_name: str) -> HttpResponse:
    run = _run_for(request, project_slug, run_name, ALL_LABELS)
    versions = list(run.versions.select_related("author").order_by("number"))
    by_number = {version.number: version for version in versions}
    context = {"project": run.project, "run": run, "versions": versions, "diff": None, "error": ""}
    old_number = int_param(request.GET.get("old")) or (versions[-2].number if len(versions) > 1 else None)
    new_number = int_param(request.GET.get("new")) or (versions[-1].number if versions else None)
    old, new = by_number.get(old_number), by_number.get(new_number)
    context |= {"old": old, "new": new}
    if len(versions) < 2:
        context["error"] = "Save at least two versions of this run's label table to compare them."
    elif old is None or new is None:
        context["error"] = "Choose two versions of this run."
    else:
        try:
            diff = version_diff(old=old, new=new)
            context |= {"diff": diff, "diff_counts": {kind: diff.count(kind) for kind in ("changed", "added",
                                                                                          "removed")}}
        except VersionIntegrityError as exc:
            context["error"] = str(exc)
    return page_or_partial(request, "labeling/version_diff.html", "diff-result", context)


@login_required
@require_GET
def label_export(request: HttpRequest, project_slug: str, run_name: str) -> HttpResponse:
    run = _run_for(request, project_slug, run_name)
    fmt = request.GET.get("format", "xlsx")
    if fmt not in EXPORT_FORMATS:
        raise Http404("Unknown export format")
    version = None
    if request.GET.get("version"):
        version = get_object_or_404(LabelTableVersion, run=run, number=int_param(request.GET["version"]) or 0)
    reviewer = request.GET.get("reviewer") or None
    if reviewer == "me":
        reviewer = request.user.username
    if (reviewer != request.user.username or version is not None) and not may_on_run(run, ALL_LABELS):
        # Blind labeling: a reviewer may take their own labels offline, nobody else's.
        raise PermissionDenied(blind_refusal(run))
    handle = tempfile.TemporaryFile()
    try:
        label_table_export(run=run, fmt=fmt, out=handle, version=version, reviewer=reviewer, actor=request.user)
    except (ValueError, VersionIntegrityError) as exc:
        handle.close()
        messages.error(request, str(exc))
        return redirect("version_list", project_slug=project_slug, run_name=run_name)
    handle.seek(0)
    name = export_filename(run, fmt, version=version.number if version else None, reviewer=reviewer)
    return FileResponse(handle, as_attachment=True, filename=name, content_type=CONTENT_TYPES[fmt])


@login_required
@require_http_methods(["GET", "POST"])
def label_import(request: HtmxHttpRequest, project_slug: str, run_name: str) -> HttpResponse:
    run = _run_for(request, project_slug, run_name, LEAD)
    context = {"project": run.project, "run": run, "preview": None, "error": "", "token": "",
               "max_size": filesizeformat(settings.CITELAB_MAX_UPLOAD_BYTES)}
    if request.method == "POST":
        # Refused from the announced length, before Django spools the body to disk.
        if _content_length(request) > settings.CITELAB_MAX_UPLOAD_BYTES + _FORM_OVERHEAD_BYTES:
            context["error"] = f"The upload is larger than the limit of {context['max_size']} (CITELAB_MAX_UPLOAD_MB)."
            return page_or_partial(request, "labeling/label_import.html", "import-preview", context)
        upload = request.FILES.get("file")
        if upload is None:
            context["error"] = "Choose a label table file (.xlsx, .csv or .jsonl) to upload."
        elif upload.size > settings.CITELAB_MAX_UPLOAD_BYTES:
            context["error"] = (f"{upload.name} is {filesizeformat(upload.size)}; the limit is "
                                f"{context['max_size']} (CITELAB_MAX_UPLOAD_MB).")
        else:
            try:
                fmt = label_table_format(upload.name)
            except ValueError as exc:
                context["error"] = str(exc)
            else:
                _prune_uploads()
                data = upload.read()
                preview = label_table_import_preview(run=run, reviewer=request.user,
                                                     table_file=read_label_table(data, format=fmt))
                context |= {"preview": preview, "filename": upload.name}
                if preview.ok and preview.has_changes:
                    context["token"] = _store_upload(request, run, data, fmt, upload.name, preview.checked)
    return page_or_partial(request, "labeling/label_import.html", "import-preview", context)


def _content_length(request: HttpRequest) -> int:
    try:
        return int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return 0


def _store_upload(request: HttpRequest, run: Run, data: bytes, fmt: str, filename: str,
                  checked: dict[int, tuple[int, int]]) -> str:
    """Keep the previewed file until it is applied, beside what the preview
    checked (row → claim id, revision: apply refuses rows whose claim moved
    since); the signed token names both and binds them to this reviewer and run."""
    stem = f"{_UPLOAD_DIR}/{uuid.uuid4().hex}"
    name = default_storage.save(f"{stem}.{fmt}", ContentFile(data))
    checked_name = default_storage.save(f"{stem}.checked.json", ContentFile(json.dumps(
        [[line, claim_id, revision] for line, (claim_id, revision) in checked.items()]).encode()))
    return signing.dumps({"name": name, "checked": checked_name, "run": run.pk, "user": request.user.pk,
                          "format": fmt, "filename": filename}, salt=_UPLOAD_SALT)


def _load_checked(name: str) -> dict[int, tuple[int, int]]:
    with default_storage.open(name, "rb") as handle:
        return {line: (claim_id, revision) for line, claim_id, revision in json.loads(handle.read())}


def _prune_uploads() -> None:
    """Delete stored previews older than their token's lifetime (24 hours):
    previewed, never applied, and no longer usable."""
    try:
        names = default_storage.listdir(_UPLOAD_DIR)[1]
    except FileNotFoundError:
        return
    cutoff = timezone.now() - timedelta(seconds=_UPLOAD_MAX_AGE)
    for name in names:
        path = f"{_UPLOAD_DIR}/{name}"
        try:
            if default_storage.get_modified_time(path) < cutoff:
                default_storage.delete(path)
        except OSError:  # deleted meanwhile by another request's pruning or apply
            continue


@login_required
@require_POST
def label_import_apply(request: HttpRequest, project_slug: str, run_name: str) -> HttpResponse:
    run = _run_for(request, project_slug, run_name, LEAD)
    try:
        stored = signing.loads(request.POST.get("token", ""), salt=_UPLOAD_SALT, max_age=_UPLOAD_MAX_AGE)
    except signing.BadSignature:
        messages.error(request, "That preview expired or is not yours: upload the file again.")
        return redirect("label_import", project_slug=project_slug, run_name=run_name)
    if (stored["run"] != run.pk or stored["user"] != request.user.pk or not default_storage.exists(stored["name"])
            or not stored.get("checked") or not default_storage.exists(stored["checked"])):
        messages.error(request, "That preview expired or is not yours: upload the file again.")
        return redirect("label_import", project_slug=project_slug, run_name=run_name)
    with default_storage.open(stored["name"], "rb") as handle:
        data = handle.read()
    checked = _load_checked(stored["checked"])
    # A token is used once, whatever the outcome: a refused apply shows the
    # rows again without a token, so its file would otherwise stay forever.
    default_storage.delete(stored["name"])
    default_storage.delete(stored["checked"])
    table_file = read_label_table(data, format=stored["format"])
    overwrite_newer = {"overwrite": True, "skip": False}.get(request.POST.get("newer", ""))
    try:
        preview = label_table_import_apply(run=run, reviewer=request.user, table_file=table_file, checked=checked,
                                           overwrite_newer=overwrite_newer, source_name=stored["filename"])
    except LabelImportError as failure:
        # The database moved since the preview: show what is wrong now.
        preview = LabelImportPreview(run=run, reviewer=request.user, format=stored["format"],
                                     rows=len(table_file.rows), issues=failure.issues)
        context = {"project": run.project, "run": run, "preview": preview, "token": "",
                   "filename": stored["filename"], "error": "Nothing was imported: the labels or claims changed "
                                                            "since the preview.",
                   "max_size": filesizeformat(settings.CITELAB_MAX_UPLOAD_BYTES)}
        return render(request, "labeling/label_import.html", context)
    except ValidationError as exc:
        if exc.code != NEWER_LABELS:
            messages.error(request, " ".join(exc.messages))
            return redirect("label_import", project_slug=project_slug, run_name=run_name)
        # No choice made about the newer labels: show the preview again, with a new token.
        preview = label_table_import_preview(run=run, reviewer=request.user, table_file=table_file, checked=checked)
        token = _store_upload(request, run, data, stored["format"], stored["filename"], preview.checked)
        context = {"project": run.project, "run": run, "preview": preview, "token": token,
                   "filename": stored["filename"], "error": " ".join(exc.messages),
                   "max_size": filesizeformat(settings.CITELAB_MAX_UPLOAD_BYTES)}
        return render(request, "labeling/label_import.html", context)
    skipped = len(preview.skipped_newer)
    note = f"; skipped {skipped} row{'s' if skipped != 1 else ''} with a newer label in the app" if skipped else ""
    messages.success(request, f"Imported {len(preview.changes)} label{'s' if len(preview.changes) != 1 else ''} "
                              f"as {request.user.username} from {stored['filename']}{note}.")
    return redirect(reverse("version_list", kwargs={"project_slug": project_slug, "run_name": run_name}))
