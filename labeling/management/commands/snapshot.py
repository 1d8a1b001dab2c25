"""``python manage.py snapshot --run NAME [--project SLUG] --note TEXT [--author NAME]``."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from labeling.management import DATA_COMMAND_CHECKS
from labeling.management.lookup import find_project, find_run, reviewer_name
from labeling.models import Reviewer
from labeling.tables.versions import label_table_snapshot


class Command(BaseCommand):
    help = "Freeze a run's current label table as its next immutable, SHA-256-hashed version."
    requires_system_checks = DATA_COMMAND_CHECKS

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--run", required=True, help="run name")
        parser.add_argument("--project", help="project slug (default: the only project)")
        parser.add_argument("--note", required=True, help="what this version is (e.g. 'after adjudication')")
        parser.add_argument("--author", type=reviewer_name, help="reviewer name recorded as the version's author")

    def handle(self, *args, run: str, project: str | None, note: str, author: str | None, **options) -> None:
        target = find_run(find_project(project), run)
        reviewer = None
        if author:
            reviewer = Reviewer.objects.filter(username=author).first()
            if reviewer is None:
                raise CommandError(f"no reviewer {author!r}")
        try:
            version = label_table_snapshot(run=target, author=reviewer, note=note, command_line=True)
        except ValidationError as exc:
            raise CommandError("; ".join(exc.messages)) from None
        self.stdout.write(self.style.SUCCESS(
            f"{target.project.slug}/{target.name} version {version.number}: {version.row_count} claims, "
            f"{version.label_count} labels, sha256 {version.sha256} ({version.file.name})"
        ))
