"""``python manage.py import_project FILE``: restore a project from export_project's archive."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from labeling.backup import project_import
from labeling.management import DATA_COMMAND_CHECKS


class Command(BaseCommand):
    help = ("Restore a project archived by export_project, with its ids, labels, versions and files, all or "
            "nothing. Refused when the project or any of its ids already exists here.")
    requires_system_checks = DATA_COMMAND_CHECKS

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", help="archive written by export_project")

    def handle(self, *args, file: str, **options) -> None:
        try:
            with open(file, "rb") as source:
                summary = project_import(source=source)
        except FileNotFoundError:
            raise CommandError(f"no file {file!r}") from None
        except ValidationError as exc:
            raise CommandError(f"{file}: " + " ".join(exc.messages) + " Nothing was imported.") from None
        self.stdout.write(self.style.SUCCESS(f"Imported {summary.describe()} from {file}"))
