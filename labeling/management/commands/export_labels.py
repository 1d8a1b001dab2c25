"""``python manage.py export_labels --run NAME [--project SLUG] [--version N] [--reviewer NAME]
[--format xlsx|csv|jsonl|parquet] -o PATH``.

The format comes from ``--format``, else from the suffix of ``-o``
(``.xlsx``, ``.csv``, ``.jsonl``, ``.parquet``); a ``--format`` that contradicts the suffix
(``--format csv -o labels.xlsx``) is refused rather than writing a file that
its name misdescribes. The folder of ``-o`` must exist: a typo in a path
should fail, not grow a new tree of folders.
"""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from labeling.management import DATA_COMMAND_CHECKS
from labeling.management.lookup import find_project, find_run, reviewer_name
from labeling.models import LabelTableVersion
from labeling.names import normalize_name
from labeling.tables.export import EXPORT_FORMATS, label_table_export
from labeling.tables.versions import VersionIntegrityError


class Command(BaseCommand):
    help = ("Write a run's label table (current, or version N) as XLSX, CSV, JSONL or Parquet. Rows show the agreed "
            "label (the one that counts for scoring), or one reviewer's with --reviewer.")
    requires_system_checks = DATA_COMMAND_CHECKS

    def add_base_argument(self, parser: CommandParser, *args, **kwargs) -> None:
        # Here --version N picks a label table version, not Django's version banner.
        if "--version" not in args:
            super().add_base_argument(parser, *args, **kwargs)

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--run", required=True, help="run name")
        parser.add_argument("--project", help="project slug (default: the only project)")
        parser.add_argument("--version", type=int, help="version number (default: the current table)")
        parser.add_argument("--reviewer", type=reviewer_name,
                            help="show this reviewer's labels instead of the agreed ones")
        parser.add_argument("--format", choices=EXPORT_FORMATS,
                            help="file format (default: from the suffix of -o)")
        parser.add_argument("-o", "--output", required=True, type=Path, help="file to write")

    def handle(self, *args, run: str, project: str | None, version: int | None, reviewer: str | None,
               format: str | None, output: Path, **options) -> None:
        format = output_format(output, format)
        if not output.parent.is_dir():
            raise CommandError(f"-o {output}: the folder {str(output.parent)!r} does not exist; create it first")
        target = find_run(find_project(project), run)
        # Names are stored in their normal form (labeling.names); typed ones meet them there.
        reviewer = normalize_name(reviewer) if reviewer is not None else None
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
        except OSError as exc:  # not writable, a folder by that name, disk full …
            partial.unlink(missing_ok=True)
            raise CommandError(f"-o {output}: cannot write the file ({exc.strerror or exc.__class__.__name__})") \
                from None
        what = f"version {chosen.number}" if chosen else "current label table"
        self.stdout.write(self.style.SUCCESS(f"{target.project.slug}/{target.name} {what} → {output}"))


def output_format(output: Path, given: str | None) -> str:
    """The export format for file ``output``: ``given`` when the suffix agrees
    or names no export format, else the suffix's. CommandError when they
    contradict each other, or when neither says."""
    suffix = output.suffix.lower().lstrip(".")
    if given is None:
        if suffix not in EXPORT_FORMATS:
            raise CommandError(f"-o {output}: cannot tell the format from the suffix; give --format "
                               f"{'|'.join(EXPORT_FORMATS)} or name the file .xlsx, .csv, .jsonl or .parquet")
        return suffix
    if suffix in EXPORT_FORMATS and suffix != given:
        raise CommandError(f"--format {given} but -o {output} ends in .{suffix}: give the file a .{given} name, "
                           f"or drop --format to write {suffix}")
    return given
