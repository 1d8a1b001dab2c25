"""``python manage.py export_labels --run NAME [--project SLUG] [--version N] [--reviewer NAME]
--format xlsx|csv|jsonl -o PATH``."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from labeling.label_tables import EXPORT_FORMATS, VersionIntegrityError, label_table_export
from labeling.management.lookup import find_project, find_run
from labeling.models import LabelTableVersion


class Command(BaseCommand):
    help = ("Write a run's label table (current, or version N) as XLSX, CSV or JSONL. Rows show the agreed "
            "label (the one that counts for scoring), or one reviewer's with --reviewer.")

    def add_base_argument(self, parser: CommandParser, *args, **kwargs) -> None:
        # Here --version N picks a label table version, not Django's version banner.
        if "--version" not in args:
            super().add_base_argument(parser, *args, **kwargs)

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--run", required=True, help="run name")
        parser.add_argument("--project", help="project slug (default: the only project)")
        parser.add_argument("--version", type=int, help="version number (default: the current table)")
        parser.add_argument("--reviewer", help="show this reviewer's labels instead of the agreed ones")
        parser.add_argument("--format", required=True, choices=EXPORT_FORMATS)
        parser.add_argument("-o", "--output", required=True, type=Path, help="file to write")

    def handle(self, *args, run: str, project: str | None, version: int | None, reviewer: str | None,
               format: str, output: Path, **options) -> None:
        target = find_run(find_project(project), run)
        chosen = None
        if version is not None:
            chosen = LabelTableVersion.objects.filter(run=target, number=version).first()
            if chosen is None:
                numbers = ", ".join(str(n) for n in target.versions.values_list("number", flat=True)) or "none"
                raise CommandError(f"run {target.name!r} has no version {version} (versions: {numbers})")
        partial = output.with_name(output.name + ".part")
        try:
            with partial.open("wb") as handle:
                label_table_export(run=target, fmt=format, out=handle, version=chosen, reviewer=reviewer)
            partial.replace(output)
        except (ValueError, VersionIntegrityError) as exc:
            partial.unlink(missing_ok=True)
            raise CommandError(str(exc)) from None
        what = f"version {chosen.number}" if chosen else "current label table"
        self.stdout.write(self.style.SUCCESS(f"{target.project.slug}/{target.name} {what} → {output}"))
