"""``python manage.py import_gold FILE --run NAME [--project SLUG] [--lead NAME]``."""

from __future__ import annotations

from pathlib import Path

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from labeling.management.lookup import find_project, find_run, reviewer_name
from labeling.models import Reviewer
from labeling.team.gold_claims import gold_import, gold_rows_read


class Command(BaseCommand):
    help = ("Mark claims of a run as hidden gold checks from a file (CSV with the header question_id,claim_index,"
            "label,reason, or JSON Lines with those keys): all rows or none.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", help="gold file: .csv, or .jsonl with one object a line")
        parser.add_argument("--run", required=True, help="run name")
        parser.add_argument("--project", help="project slug (default: the only project)")
        parser.add_argument("--lead", type=reviewer_name, help="the lead the gold labels are recorded for "
                                                               "(default: the command line)")

    def handle(self, *args, file: str, run: str, project: str | None, lead: str | None, **options) -> None:
        target = find_run(find_project(project), run)
        actor = None
        if lead:
            actor = Reviewer.objects.filter(username=lead).first()
            if actor is None:
                raise CommandError(f"--lead: no reviewer {lead!r}")
        path = Path(file)
        if not path.is_file():
            raise CommandError(f"FILE: no file {file!r}")
        try:
            count = gold_import(run=target, rows=gold_rows_read(path.read_bytes(), name=path.name), actor=actor)
        except ValidationError as exc:
            raise CommandError("nothing imported:\n" + "\n".join(exc.messages)) from None
        self.stdout.write(self.style.SUCCESS(
            f"{target.project.slug}/{target.name}: {count} claim{'' if count == 1 else 's'} marked gold from "
            f"{path.name}"))
