"""``python manage.py import_labels FILE --run NAME [--project SLUG] --reviewer NAME
[--keep-reviewers | --adjudicate] [--apply [--overwrite-newer | --skip-newer]]``.

A row naming another reviewer is refused unless a lead passes
``--keep-reviewers``; with ``--adjudicate`` (leads) each row is the lead's
adjudication of its claim.

Without ``--apply`` it only previews: every change and every bad row, and
the rows that would turn back a label made after the file was exported
(``labeling.tables.label_import``). With ``--apply`` the changes are written all or
nothing; when such newer labels exist, ``--overwrite-newer`` or
``--skip-newer`` must say what to do with them.
"""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from labeling.importers.label_table import label_table_format, read_label_table
from labeling.management import DATA_COMMAND_CHECKS
from labeling.management.lookup import find_project, find_run, reviewer_name
from labeling.models import Reviewer
from labeling.tables.import_preview import LabelImportPreview, label_table_import_preview
from labeling.tables.label_import import NEWER_LABELS, LabelImportError, label_table_import_apply


class Command(BaseCommand):
    help = ("Import a label table (XLSX, CSV, JSONL) labeled offline as REVIEWER's labels: preview by default, "
            "--apply to write (all or nothing).")
    requires_system_checks = DATA_COMMAND_CHECKS

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", type=Path)
        parser.add_argument("--run", required=True, help="run name")
        parser.add_argument("--project", help="project slug (default: the only project)")
        parser.add_argument("--reviewer", type=reviewer_name, required=True, help="whose labels the file's rows become")
        parser.add_argument("--format", choices=["xlsx", "csv", "jsonl"], help="default: from the file name")
        parser.add_argument("--apply", action="store_true", help="write the changes (default: preview only)")
        newer = parser.add_mutually_exclusive_group()
        newer.add_argument("--overwrite-newer", action="store_true",
                           help="write rows even where the app has a label newer than the file's")
        newer.add_argument("--skip-newer", action="store_true",
                           help="leave out rows where the app has a label newer than the file's")
        mode = parser.add_mutually_exclusive_group()
        mode.add_argument("--keep-reviewers", action="store_true",
                          help="(leads) record each row under the reviewer its reviewer column names "
                               "(an external reviewer is created for a new name)")
        mode.add_argument("--adjudicate", action="store_true",
                          help="(leads) record each row as REVIEWER's adjudication, its adjudication_reason "
                               "(else its justification) the reason")

    def handle(self, *args, file: Path, run: str, project: str | None, reviewer: str, format: str | None,
               apply: bool, overwrite_newer: bool, skip_newer: bool, keep_reviewers: bool = False,
               adjudicate: bool = False, **options) -> None:
        if not file.is_file():
            raise CommandError(f"{file}: no such file")
        if file.stat().st_size > settings.CITELAB_MAX_UPLOAD_BYTES:
            raise CommandError(f"{file} is larger than the {settings.CITELAB_MAX_UPLOAD_BYTES // 2**20} MB limit "
                               "(CITELAB_MAX_UPLOAD_MB)")
        target = find_run(find_project(project), run)
        who = Reviewer.objects.filter(username=reviewer).first()
        if who is None:
            raise CommandError(f"no reviewer {reviewer!r}")
        try:
            fmt = format or label_table_format(file.name)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        table_file = read_label_table(file.read_bytes(), format=fmt)
        if table_file.file_problem:
            raise CommandError(f"{file}: {table_file.file_problem}")
        mode = {"keep_reviewers": keep_reviewers, "adjudicate": adjudicate}
        if not apply:
            try:
                preview = label_table_import_preview(run=target, reviewer=who, table_file=table_file, **mode)
            except ValidationError as exc:
                raise CommandError(" ".join(exc.messages)) from None
            self._report(preview)
            if preview.issues:
                raise CommandError(f"{len(preview.issues)} bad row(s) in {file}; fix them, then run with --apply")
            newer = len(preview.newer)
            choose = " (and --overwrite-newer or --skip-newer)" if newer else ""
            self.stdout.write(self.style.SUCCESS(f"preview only: {len(preview.changes)} label(s) would change; "
                                                 f"run again with --apply{choose} to write them"))
            return
        choice = True if overwrite_newer else (False if skip_newer else None)
        try:
            preview = label_table_import_apply(run=target, reviewer=who, table_file=table_file,
                                               overwrite_newer=choice, source_name=file.name,
                                               command_line=True, **mode)
        except LabelImportError as failure:
            for issue in failure.issues:
                self.stderr.write(f"{file}: row {issue.line}: {issue.field}: {issue.reason}")
            raise CommandError(f"{len(failure.issues)} bad row(s) in {file}; nothing was imported") from None
        except ValidationError as exc:
            if exc.code == NEWER_LABELS:
                raise CommandError(" ".join(exc.messages) + " Run again with --overwrite-newer or --skip-newer; "
                                   "nothing was imported.") from None
            raise CommandError(" ".join(exc.messages)) from None
        self._report(preview)
        whose = ("adjudication(s) by " if adjudicate else "label(s) of ") + (
            "the reviewers the file names" if keep_reviewers else who.username)
        skipped = f", {len(preview.skipped_newer)} row(s) with a newer label skipped" if preview.skipped_newer else ""
        self.stdout.write(self.style.SUCCESS(
            f"{target.project.slug}/{target.name}: {len(preview.changes)} {whose} saved{skipped}"
        ))

    def _report(self, preview: LabelImportPreview) -> None:
        for change in preview.changes:
            old = change.old_label or "none"
            note = " (justification changed)" if change.justification_changed else ""
            if change.newer is not None:
                name, value, when = change.newer
                note += f" [newer in the app: {name}'s {value} of {when:%Y-%m-%dT%H:%M:%SZ}]"
            who = f" ({change.reviewer})" if change.reviewer else ""
            self.stdout.write(f"row {change.line}: {change.question_id} claim {change.claim_index}{who}: "
                              f"{old} → {change.new_label}{note}")
        for issue in preview.issues:
            self.stderr.write(f"row {issue.line}: {issue.field}: {issue.reason}")
        self.stdout.write(f"{preview.rows} row(s) read: {len(preview.changes)} change(s), {preview.unchanged} "
                          f"unchanged, {preview.blank} without a label, {len(preview.issues)} bad, "
                          f"{len(preview.newer)} newer in the app"
                          + (f"; {len(preview.judgment_changes)} citation judgment(s) and "
                             f"{len(preview.factual_changes)} factual mark(s) to save"
                             if preview.judgment_changes or preview.factual_changes else ""))
