"""``add_reviewer NAME [--password P] [--project SLUG ...] [--role lead|reviewer|viewer]``.

Creates a reviewer who can log in, member of the given projects with a role;
for an existing reviewer, adds them to the projects (or changes their role there).
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from labeling.management import DATA_COMMAND_CHECKS
from labeling.models import Membership, Project, Reviewer, Role
from labeling.team.memberships import membership_set
from labeling.team.reviewers import reviewer_create


class Command(BaseCommand):
    help = ("Create a human reviewer and make them a member of the given projects "
            "(without --project: of every project) with a role (default: reviewer). "
            "For an existing reviewer, --project adds them with --role (or changes their role). "
            "Without --password one is generated and shown once.")
    requires_system_checks = DATA_COMMAND_CHECKS

    def add_arguments(self, parser):
        parser.add_argument("name", help="login name of the reviewer")
        parser.add_argument("--password", help="password (default: a random one, printed once)")
        parser.add_argument("--project", action="append", dest="projects", metavar="SLUG",
                            help="project slug; repeat for several projects")
        # reviewer by default: a new account labels; leading a project (imports, members) is granted on purpose.
        parser.add_argument("--role", choices=Role.values, default=Role.REVIEWER,
                            help="role in those projects (default: %(default)s)")

    def handle(self, *args, **options):
        existing = Reviewer.objects.filter(username=Reviewer.normalize_username(options["name"] or "")).first()
        try:
            if existing is not None and options["projects"]:
                reviewer = self._add_existing(existing, options)
            else:
                reviewer, password = reviewer_create(
                    username=options["name"], password=options["password"], project_slugs=options["projects"],
                    role=options["role"],
                )
        except ValidationError as exc:
            raise CommandError(" ".join(exc.messages)) from None
        roles = ", ".join(f"{slug} ({role})" for slug, role in Membership.objects.filter(reviewer=reviewer)
                          .order_by("project__slug").values_list("project__slug", "role")) or "no project yet"
        if existing is not None:
            self.stdout.write(self.style.SUCCESS(f"Reviewer {reviewer.username} is now a member of: {roles}."))
            return
        self.stdout.write(self.style.SUCCESS(f"Created reviewer {reviewer.username} (member of: {roles})."))
        if options["password"] is None:
            self.stdout.write(f"Password: {password}  (shown once; change it in the admin if needed)")

    def _add_existing(self, reviewer: Reviewer, options: dict) -> Reviewer:
        if options["password"] is not None:
            raise CommandError(f"Reviewer {reviewer.username} already exists: --password is only for a new "
                               "reviewer (change a password in the admin).")
        projects = list(Project.objects.filter(slug__in=options["projects"]))
        unknown = sorted(set(options["projects"]) - {p.slug for p in projects})
        if unknown:
            raise CommandError(f"Unknown project(s): {', '.join(unknown)}.")
        for project in projects:
            membership_set(project=project, reviewer=reviewer, role=options["role"])
        return reviewer
