"""``python manage.py import_answers FILE [--project SLUG] [--run NAME]`` (SPEC §6)."""

from __future__ import annotations

from pathlib import Path

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from labeling.importers.load import DEFAULT_IMPORT_REVIEWER, project_for_import, run_import
from labeling.importers.records import ImportFailed
from labeling.management import DATA_COMMAND_CHECKS


class Command(BaseCommand):
    help = (
        "Import an answers file (JSON Lines, or CSV/XLSX with one row per claim; SPEC §6) into a project: "
        "all or nothing, "
        "every bad line reported; re-importing the same file changes nothing."
    )
    requires_system_checks = DATA_COMMAND_CHECKS

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", type=Path)
        parser.add_argument("--project", help="project slug (created if absent; default: the only project)")
        parser.add_argument("--run", help="run name for every answer (overrides the file's `run` field)")
        parser.add_argument("--reviewer", default=DEFAULT_IMPORT_REVIEWER,
                            help="imported reviewer credited with labels given without one (default: %(default)s)")

    def handle(self, *args, file: Path, project: str | None, run: str | None, reviewer: str, **options) -> None:
        if not file.is_file():
            raise CommandError(f"{file}: no such file")
        try:
            # One transaction: a project created for a file that fails is not left behind.
            with transaction.atomic():
                target = project_for_import(slug=project)
                report = run_import(project=target, source=file, run_name=run, default_reviewer=reviewer)
        except ValidationError as exc:
            raise CommandError(" ".join(exc.messages)) from None
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        except ImportFailed as failure:
            for issue in failure.issues:
                self.stderr.write(f"{file}: {issue}")
            raise CommandError(f"{len(failure.issues)} problem(s) in {file}; nothing was imported") from None
        for warning in report.warnings:
            self.stdout.write(self.style.WARNING(f"{file}: {warning}"))
        self.stdout.write(self.style.SUCCESS(f"project {target.slug}: {report.summary()}"))
