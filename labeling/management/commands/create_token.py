"""``python manage.py create_token --reviewer NAME --project SLUG [--expires-days N] [--role ROLE]
[--name NAME]``: a project token for the HTTP API (SPEC §6), printed alone on the last line.

The token is shown this once and stored hashed: keep it in the CI's secrets.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from labeling.integrations.tokens import DEFAULT_EXPIRY_DAYS, MAX_EXPIRY_DAYS, token_create
from labeling.management.lookup import find_project
from labeling.models import Reviewer, Role
from labeling.names import normalize_name


class Command(BaseCommand):
    help = "Make an API token for a reviewer of a project; the token is printed alone on the last line."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--reviewer", required=True, help="the member the token acts as")
        parser.add_argument("--project", required=True, help="project slug")
        parser.add_argument("--expires-days", type=int, default=DEFAULT_EXPIRY_DAYS,
                            help=f"days until it expires, 1–{MAX_EXPIRY_DAYS} (default {DEFAULT_EXPIRY_DAYS})")
        parser.add_argument("--role", choices=Role.values,
                            help="the token's role (default and at most: the reviewer's role in the project)")
        parser.add_argument("--name", default="", help="the token's name in lists and the audit log "
                                                       "(default: REVIEWER-<UTC time>)")

    def handle(self, *args, reviewer: str, project: str, expires_days: int, role: str | None, name: str,
               **options) -> None:
        target = find_project(project)
        holder = Reviewer.objects.filter(username=normalize_name(reviewer)).first()
        if holder is None:
            raise CommandError(f"--reviewer {reviewer!r}: no such reviewer (add them with add_reviewer)")
        try:
            issued = token_create(project=target, reviewer=holder, created_by=None, name=name, role=role,
                                  expires_days=expires_days)
        except ValidationError as exc:
            flag = {"bad_expiry": "--expires-days", "bad_name": "--name", "exists": "--name",
                    "role_above_member": "--role"}.get(exc.code, "--reviewer")
            raise CommandError(f"{flag}: {' '.join(exc.messages)}") from None
        token = issued.token
        self.stderr.write(self.style.SUCCESS(
            f"token {token.name!r} for {holder.username} in project {target.slug}, role {token.role}, expires "
            f"{token.expires_at:%Y-%m-%d %H:%M} UTC. It is shown once; send it as 'Authorization: Bearer <token>'."))
        self.stdout.write(issued.secret)
