"""``python manage.py export_dataset --run NAME [--project SLUG] [--version N] -o DIR`` (SPEC §6): the
run's label table as a folder that ``datasets.load_dataset("parquet", data_dir=DIR)`` reads, with its
dataset card (``labeling.tables.dataset_export``)."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from labeling.management.lookup import find_project, find_run
from labeling.models import LabelTableVersion
from labeling.tables.dataset_export import DATA_FILE, dataset_export
from labeling.tables.versions import VersionIntegrityError


class Command(BaseCommand):
    help = ("Write a run's label table (current, or version N) as a Hugging Face dataset folder: "
            f"{DATA_FILE} and a dataset card README.md (counts, labels, reviewers, agreement, licence, SHA-256).")

    def add_base_argument(self, parser: CommandParser, *args, **kwargs) -> None:
        # Here --version N picks a label table version, not Django's version banner.
        if "--version" not in args:
            super().add_base_argument(parser, *args, **kwargs)

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--run", required=True, help="run name")
        parser.add_argument("--project", help="project slug (default: the only project)")
        parser.add_argument("--version", type=int, help="version number (default: the current table)")
        parser.add_argument("-o", "--output", required=True, type=Path,
                            help="folder to create (its parent must exist; it must not exist or be empty)")

    def handle(self, *args, run: str, project: str | None, version: int | None, output: Path, **options) -> None:
        target = find_run(find_project(project), run)
        chosen = None
        if version is not None:
            chosen = LabelTableVersion.objects.filter(run=target, number=version).first()
            if chosen is None:
                numbers = ", ".join(str(n) for n in target.versions.values_list("number", flat=True)) or "none"
                raise CommandError(f"run {target.name!r} has no version {version} (versions: {numbers})")
        try:
            result = dataset_export(run=target, directory=output, version=chosen)
        except (ValueError, VersionIntegrityError) as exc:
            raise CommandError(str(exc)) from None
        except OSError as exc:
            raise CommandError(f"-o {output}: cannot write the folder ({exc.strerror or exc.__class__.__name__})") \
                from None
        what = f"version {chosen.number}" if chosen else "current label table"
        self.stdout.write(self.style.SUCCESS(f"{target.project.slug}/{target.name} {what}: {result.rows} rows → "
                                             f"{output} (SHA-256 {result.sha256[:12]}…)"))
