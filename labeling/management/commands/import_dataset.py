"""``python manage.py import_dataset --format NAME FILE… --project SLUG [--run NAME] [--commit SHA]``
(SPEC §6): a public attribution dataset in its own format → runs with their
provenance (``labeling.importers.datasets.load``; formats in ``labeling.importers.datasets``)."""

from __future__ import annotations

from pathlib import Path

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from labeling.importers.datasets import ALIASES, FORMATS
from labeling.importers.datasets.load import dataset_import
from labeling.importers.load import project_for_import
from labeling.importers.records import ImportFailed


class Command(BaseCommand):
    help = ("Import a public attribution dataset (ExpertQA, ALCE human evaluation, Liu et al. 2023, "
            "LFQA-Verification/SALAD, HAGRID, RAGTruth) in its own format: every annotator its own reviewer, "
            "the source's label kept, the run's provenance recorded; all or nothing, re-importing changes nothing.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("files", nargs="+", type=Path, metavar="FILE")
        parser.add_argument("--format", required=True, choices=[*FORMATS, *ALIASES])
        parser.add_argument("--project", help="project slug (created if absent; default: the only project)")
        parser.add_argument("--run", help="run name (one system in the files) or run name prefix (several)")
        parser.add_argument("--commit", help="commit of the dataset's repository the files come from "
                                             "(default: the one the importer was written against)")

    def handle(self, *args, files: list[Path], format: str, project: str | None, run: str | None,
               commit: str | None, **options) -> None:
        for path in files:
            if not path.is_file():
                raise CommandError(f"{path}: no such file")
        try:
            # One transaction: a project created for files that fail is not left behind.
            with transaction.atomic():
                target = project_for_import(slug=project)
                report, runs = dataset_import(project=target, format=format, files=files, run_name=run,
                                              commit=commit)
        except ValidationError as exc:
            raise CommandError(" ".join(exc.messages)) from None
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        except ImportFailed as failure:
            for issue in failure.issues:
                self.stderr.write(str(issue))
            raise CommandError(f"{len(failure.issues)} problem(s); nothing was imported") from None
        for warning in report.warnings:
            self.stdout.write(self.style.WARNING(str(warning)))
        for run in runs.values():
            self.stdout.write(f"run {run.name}: {run.provenance}")
        self.stdout.write(self.style.SUCCESS(f"project {target.slug}: {report.summary()}"))
