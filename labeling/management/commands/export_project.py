"""``python manage.py export_project SLUG FILE``: back up a whole project."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from labeling.backup.project import project_export
from labeling.management import DATA_COMMAND_CHECKS
from labeling.management.lookup import find_project


class Command(BaseCommand):
    help = ("Write a whole project (questions, runs, answers, claims, labels, versions with their files, "
            "members, audit log…) to a zip archive that import_project restores losslessly.")
    requires_system_checks = DATA_COMMAND_CHECKS

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug", help="project slug")
        parser.add_argument("file", help="archive to write (e.g. backup.zip); its folder must exist")

    def handle(self, *args, slug: str, file: str, **options) -> None:
        project = find_project(slug)
        target = Path(file)
        if not target.parent.is_dir():
            raise CommandError(f"folder {str(target.parent)!r} does not exist")
        # Written beside the target and renamed: a failed export never leaves half an archive.
        handle, partial = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".partial")
        try:
            with os.fdopen(handle, "wb") as out:
                summary = project_export(project=project, out=out)
            os.replace(partial, target)
        except BaseException:
            Path(partial).unlink(missing_ok=True)
            raise
        self.stdout.write(self.style.SUCCESS(f"Exported {summary.describe()} to {target}"))
