"""``python manage.py reviewers --run NAME [--project SLUG] [--format json|table]``."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandParser

from labeling.management.lookup import find_project, find_run
from labeling.team.quality import run_dashboard
from scoring.ratio import format_value


class Command(BaseCommand):
    help = ("The reviewer dashboard of a run: labels, median seconds per claim, UNSUPPORTED share, kappa against "
            "the counted label, gold accuracy with its Wilson 95% interval, open send-backs, qualified.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--run", required=True, help="run name")
        parser.add_argument("--project", help="project slug (default: the only project)")
        parser.add_argument("--format", choices=("json", "table"), default="table")

    def handle(self, *args, run: str, project: str | None, format: str, **options) -> None:
        board = run_dashboard(run=find_run(find_project(project), run))
        if format == "json":
            self.stdout.write(json.dumps(board.as_dict(), indent=2, ensure_ascii=False))
            return
        self.stdout.write(f"{'reviewer':<20} {'labels':>6} {'s/claim':>8} {'UNSUP':>13} {'kappa':>20} "
                          f"{'gold':>22} {'sent back':>9}  qualified")
        for row in board.rows:
            kappa = (f"{format_value(row.kappa)} ({format_value(row.kappa_ci95[0])}–"
                     f"{format_value(row.kappa_ci95[1])})" if row.kappa_ci95 else format_value(row.kappa))
            ci = row.gold_accuracy_ci95
            gold = f"{row.gold_accuracy}" + (f" ({format_value(ci[0])}–{format_value(ci[1])})" if ci else "")
            qualified = {None: "no rule", True: "yes", False: "no"}[row.qualified]
            self.stdout.write(f"{row.reviewer:<20} {row.labels:>6} {format_value(row.median_seconds, 1):>8} "
                              f"{str(row.unsupported_share):>13} {kappa:>20} {gold:>22} {row.send_backs_open:>9}  "
                              f"{qualified}{'  FAST, NEARLY ALWAYS SUPPORTED' if row.fast_and_supported else ''}")
        if board.exclusion:
            self.stdout.write(f"left out of the run's figures: {board.exclusion.labels} labels of "
                              f"{', '.join(board.exclusion.names)} (not qualified)")
