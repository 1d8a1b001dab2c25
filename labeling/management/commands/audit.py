"""``python manage.py audit --run NAME [--project SLUG] [--format json|table]
[--actor NAME] [--action ACTION] [--since YYYY-MM-DD] [--until YYYY-MM-DD]``:
the run's audit log, oldest first (``labeling.audit``)."""

from __future__ import annotations

import argparse
import json
from datetime import date

from django.core.management.base import BaseCommand, CommandError, CommandParser

from labeling.audit import AuditFilter, event_row, events_for_run_name
from labeling.management import DATA_COMMAND_CHECKS
from labeling.management.lookup import find_project
from labeling.models import AuditAction
from labeling.names import normalize_name


class Command(BaseCommand):
    help = ("Print a run's audit log (who labeled, edited, split, merged, adjudicated, saved a version, "
            "imported or exported what, and when), oldest first; a deleted run's log is found by its name.")
    requires_system_checks = DATA_COMMAND_CHECKS

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--run", required=True, help="run name (its current name, or a deleted run's)")
        parser.add_argument("--project", help="project slug (default: the only project)")
        parser.add_argument("--format", choices=("json", "table"), default="table")
        parser.add_argument("--actor", default="", help="only this reviewer's events ('command line' for those "
                                                        "without one)")
        parser.add_argument("--action", default="", choices=["", *AuditAction.values], metavar="ACTION",
                            help=f"only this action: {', '.join(AuditAction.values)}")
        parser.add_argument("--since", type=_day, help="from this day on (YYYY-MM-DD, UTC)")
        parser.add_argument("--until", type=_day, help="up to and including this day (YYYY-MM-DD, UTC)")

    def handle(self, *args, run: str, project: str | None, format: str, actor: str, action: str,
               since: date | None, until: date | None, **options) -> None:
        target = find_project(project)
        name = normalize_name(run)
        events = events_for_run_name(project=target, run_name=name,
                                     filter=AuditFilter(actor=actor, action=action, since=since, until=until))
        rows = [event_row(event) for event in events.iterator()]
        if not rows and not target.runs.filter(name=name).exists():
            runs = ", ".join(target.runs.values_list("name", flat=True)) or "none"
            raise CommandError(f"project {target.slug!r} has no run {name!r} and no log of a deleted run of that "
                               f"name (runs: {runs})")
        if format == "json":
            self.stdout.write(json.dumps(rows, ensure_ascii=False, indent=2))
            return
        for row in rows:
            detail = json.dumps(row["detail"], ensure_ascii=False, sort_keys=True) if row["detail"] else ""
            self.stdout.write("\t".join([row["at"], row["actor"], row["action"], row["target"], detail]))
        self.stdout.write(self.style.SUCCESS(f"{len(rows)} event(s) of run {name!r} in project {target.slug!r}"))


def _day(text: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a day: write YYYY-MM-DD") from None
