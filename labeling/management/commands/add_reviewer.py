"""``add_reviewer NAME [--password P] [--project SLUG ...]``: create a reviewer who can log in."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from labeling.services import reviewer_create


class Command(BaseCommand):
    help = ("Create a human reviewer and make them a member of the given projects "
            "(without --project: of every project). Without --password one is generated and shown once.")

    def add_arguments(self, parser):
        parser.add_argument("name", help="login name of the reviewer")
        parser.add_argument("--password", help="password (default: a random one, printed once)")
        parser.add_argument("--project", action="append", dest="projects", metavar="SLUG",
                            help="project slug; repeat for several projects")

    def handle(self, *args, **options):
        try:
            reviewer, password = reviewer_create(
                username=options["name"], password=options["password"], project_slugs=options["projects"],
            )
        except ValidationError as exc:
            raise CommandError(" ".join(exc.messages)) from None
        projects = ", ".join(sorted(reviewer.projects.values_list("slug", flat=True))) or "no project yet"
        self.stdout.write(self.style.SUCCESS(f"Created reviewer {reviewer.username} (member of: {projects})."))
        if options["password"] is None:
            self.stdout.write(f"Password: {password}  (shown once; change it in the admin if needed)")
