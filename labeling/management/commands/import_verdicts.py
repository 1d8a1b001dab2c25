"""``python manage.py import_verdicts FILE --run NAME --reviewer NAME
[--format auto|rows|phoenix|llm-log] [--threshold T] [--model M] [--dry-run]``.

Another judge's verdicts (RAGAS, DeepEval, TruLens, Phoenix, an in-house
prompt) become the labels of the reviewer ``NAME`` of kind ``model``, to be
graded against the humans like any judge (SPEC §4.4). The file shapes are in
``labeling.importers.verdicts``; matching is ``labeling.judges.runs.verdicts_import``.
Bad lines are all reported and nothing is imported; verdicts that match no
claim are listed with the reason, never dropped silently.
"""

from __future__ import annotations

from pathlib import Path

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from labeling.importers.records import ImportFailed
from labeling.importers.verdicts import FORMATS, read_verdicts
from labeling.judges.runs import verdicts_import
from labeling.management import DATA_COMMAND_CHECKS
from labeling.management.lookup import find_project, find_run, reviewer_name

SHOWN_UNMATCHED = 200


class Command(BaseCommand):
    help = ("Import another judge's per-claim verdicts (JSONL/CSV rows, Phoenix-style annotations, an LLM-judge "
            "log) as the labels of a reviewer of kind 'model'.")
    requires_system_checks = DATA_COMMAND_CHECKS

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file")
        parser.add_argument("--run", required=True)
        parser.add_argument("--project")
        parser.add_argument("--reviewer", type=reviewer_name, required=True,
                            help="the judge's reviewer name (kind 'model')")
        parser.add_argument("--format", choices=FORMATS, default="auto")
        parser.add_argument("--threshold", type=float,
                            help="turn scores into labels: score >= T is SUPPORTED, below is UNSUPPORTED")
        parser.add_argument("--model", default="", help="what produced the verdicts (kept with the import)")
        parser.add_argument("--dry-run", action="store_true", help="report what would be imported, write nothing")

    def handle(self, *args, file: str, run: str, project: str | None, reviewer: str, format: str,
               threshold: float | None, model: str, dry_run: bool, **options) -> None:
        path = Path(file)
        if not path.is_file():
            raise CommandError(f"no file {file!r}")
        target = find_run(find_project(project), run)
        parsed = read_verdicts(path.read_bytes(), name=path.name, format=format, threshold=threshold)
        if parsed.issues:
            raise CommandError(str(ImportFailed(parsed.issues)))
        try:
            result = verdicts_import(
                run=target, reviewer_name=reviewer, records=parsed.records, model=model, dry_run=dry_run,
                details={"file": path.name, "format": parsed.format, "threshold": threshold,
                         "verdicts": len(parsed.records)})
        except ValidationError as exc:
            raise CommandError(" ".join(exc.messages)) from None
        verb = "would label" if dry_run else "labeled"
        lines = [f"{len(parsed.records)} verdict(s) read ({parsed.format}); {verb} {result.labeled} claim(s) of run "
                 f"{target.name!r} as {reviewer!r}, {result.unchanged} unchanged, "
                 f"{len(result.unmatched)} not matched to a claim"]
        for item in result.unmatched[:SHOWN_UNMATCHED]:
            lines.append(f"  not imported: {item}")
        if len(result.unmatched) > SHOWN_UNMATCHED:
            lines.append(f"  … and {len(result.unmatched) - SHOWN_UNMATCHED} more")
        if dry_run:
            lines.append("dry run: nothing was written")
        self.stdout.write("\n".join(lines))
