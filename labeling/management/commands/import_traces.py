"""``python manage.py import_traces --format openinference|langfuse|langsmith FILE --run NAME [--project SLUG]``
(SPEC §6): a tracing tool's export → a run (``labeling.importers.traces.load``)."""

from __future__ import annotations

from pathlib import Path

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from labeling.importers.load import project_for_import
from labeling.importers.records import ImportFailed
from labeling.importers.traces import FORMATS
from labeling.importers.traces.load import trace_import


class Command(BaseCommand):
    help = ("Import traces exported from Phoenix/OpenInference, Langfuse or LangSmith: each trace becomes an answer "
            "(retrieved documents → passages, LLM output → answer, its markers → citations, trace id → external "
            "id); spans that do not fit are listed by id; re-importing changes nothing.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", type=Path)
        parser.add_argument("--format", required=True, choices=list(FORMATS))
        parser.add_argument("--run", default="traces", help="the run the traces become (default: %(default)s)")
        parser.add_argument("--project", help="project slug (created if absent; default: the only project)")

    def handle(self, *args, file: Path, format: str, run: str, project: str | None, **options) -> None:
        if not file.is_file():
            raise CommandError(f"{file}: no such file")
        try:
            with transaction.atomic():
                target = project_for_import(slug=project)
                result = trace_import(project=target, format=format, file=file, run_name=run)
        except ValidationError as exc:
            raise CommandError(" ".join(exc.messages)) from None
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        except ImportFailed as failure:
            for issue in failure.issues:
                self.stderr.write(str(issue))
            raise CommandError(f"{len(failure.issues)} problem(s); nothing was imported") from None
        for unfit in result.unfit:
            self.stdout.write(self.style.WARNING(f"left out: {unfit}"))
        for warning in result.report.warnings:
            self.stdout.write(self.style.WARNING(str(warning)))
        self.stdout.write(self.style.SUCCESS(f"project {target.slug}: {result.report.summary()}"))
