"""Label table downloads (SPEC §5): a run's label table, or one version of it, as
XLSX, CSV, JSON Lines or Parquet, with the file name it is saved under."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import IO

from django.utils.text import get_valid_filename

from labeling.audit import audit_record
from labeling.db import consistent_read
from labeling.exports.csv_jsonl import write_csv, write_jsonl
from labeling.exports.label_table import (
    label_table_frame,
    passage_texts,
    passages_frame,
    table_claim_metrics,
)
from labeling.exports.parquet import PARQUET_EXTRA, parquet_available, write_parquet
from labeling.exports.xlsx import WorkbookInfo, write_label_workbook
from labeling.models import (
    AuditAction,
    Label,
    LabelTableVersion,
    Membership,
    Reviewer,
    Run,
)
from labeling.tables.versions import version_table

# Parquet (SPEC §6) needs the optional pyarrow (labeling.exports.parquet).
EXPORT_FORMATS = ("xlsx", "csv", "jsonl", "parquet")


CONTENT_TYPES = {
    "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "csv": "text/csv; charset=utf-8",
    "jsonl": "application/x-ndjson; charset=utf-8",
    "parquet": "application/vnd.apache.parquet",
}


def export_filename(run: Run, fmt: str, *, version: int | None = None, reviewer: str | None = None) -> str:
    """Download name, e.g. ``expertqa_rr_gs_gpt4_labels_v2.xlsx``."""
    parts = [run.project.slug, run.name, "labels"]
    if version is not None:
        parts.append(f"v{version}")
    if reviewer:
        parts.append(reviewer)
    return get_valid_filename("_".join(parts) + f".{fmt}")


def _reviewer_of(run: Run, name: str) -> bool:
    """``name`` is a member of ``run``'s project, or has given a label on ``run``
    (an imported ``external`` or ``model`` reviewer is no member). One or two queries."""
    return (Membership.objects.filter(project_id=run.project_id, reviewer__username=name).exists()
            or Label.objects.filter(claim__answer__run=run, reviewer__username=name).exists())


def label_table_export(
    *, run: Run, fmt: str, out: IO[bytes], version: LabelTableVersion | None = None, reviewer: str | None = None,
    actor: Reviewer | None = None,
) -> None:
    """Write ``run``'s label table — current (agreed, or ``reviewer``'s
    labels) or ``version``'s — as ``fmt`` (xlsx, csv, jsonl, parquet) to
    ``out``, and record in the audit log that ``actor`` (None: the command
    line) did.

    Raises ValueError for an unknown format, for parquet without pyarrow (the
    ``parquet`` extra), a reviewer combined with a version (a version stores
    the agreed labels), or a ``reviewer`` who is neither a member of the run's
    project nor has a label on the run (an unknown name, a typo: their table
    would be silently empty); VersionIntegrityError when the version's file
    fails verification.
    """
    if fmt not in EXPORT_FORMATS:
        raise ValueError(f"unknown format {fmt!r}: use {', '.join(EXPORT_FORMATS)}")
    if fmt == "parquet" and not parquet_available():
        raise ValueError(f"the parquet format needs pyarrow: {PARQUET_EXTRA}")
    if version is not None and reviewer:
        raise ValueError("a version stores the agreed labels; a reviewer's labels export from the current table")
    if reviewer and not _reviewer_of(run, reviewer):
        # One message whether the account exists or not: the name is not this run's reviewer either way.
        raise ValueError(f"reviewer {reviewer!r} is not a member of project {run.project.slug!r} and has no label "
                         f"on run {run.name!r}: there are no labels of theirs to export")
    # The table and its Passages sheet as of one moment (labeling.db).
    with consistent_read():
        if version is not None:
            table = passage_texts(run, version_table(version))
        else:
            table = label_table_frame(run, reviewer=reviewer)
        passages = passages_frame(run) if fmt == "xlsx" else None
    if fmt == "csv":
        write_csv(table, out)
    elif fmt == "jsonl":
        write_jsonl(table, out)
    elif fmt == "parquet":
        write_parquet(table, out)
    else:
        info = WorkbookInfo(
            project=run.project.slug, run=run.name, version=version.number if version else None,
            sha256=version.sha256 if version else None, reviewer=reviewer, exported_at=datetime.now(UTC),
            note=version.note if version else "",
        )
        write_label_workbook(out, table=table, metrics=table_claim_metrics(table), passages=passages, info=info)
    audit_record(action=AuditAction.EXPORT, actor=actor, run=run,
                 target=export_filename(run, fmt, version=version.number if version else None, reviewer=reviewer),
                 detail={"format": fmt, "version": version.number if version else None, "reviewer": reviewer,
                         "rows": len(table)})
