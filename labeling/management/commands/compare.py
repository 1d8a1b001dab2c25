"""``python manage.py compare --run A --run B [--project SLUG] [--format json|table|xlsx] [-o PATH]
[--threshold 0.85] [--confidence 0.95]``: run B against run A on the questions both answered
(SPEC §5), each delta with its paired interval (SPEC §4.5)."""

from __future__ import annotations

import json
from pathlib import Path

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from labeling.comparison import RunComparison, comparison_xlsx, interval_label, noise_verdict, run_comparison
from labeling.management import DATA_COMMAND_CHECKS
from labeling.management.lookup import find_project, find_run
from labeling.models import Run
from scoring.compare import DEFAULT_THRESHOLD
from scoring.deltas import format_delta
from scoring.figures import interval_text
from scoring.intervals import DEFAULT_CONFIDENCE

# How many claims of each list the table format prints; json and xlsx have all.
TABLE_LIMIT = 50


def find_runs(names: list[str], project_slug: str | None) -> tuple[Run, Run]:
    """Runs A and B by name, in ``--project`` or in the one project holding both.

    CommandError when a run is missing, or without ``--project`` when the
    names do not pick one project.
    """
    if project_slug:
        project = find_project(project_slug)
        return find_run(project, names[0]), find_run(project, names[1])
    by_project: dict[int, dict[str, Run]] = {}
    for run in Run.objects.select_related("project").filter(name__in=names):
        by_project.setdefault(run.project_id, {})[run.name] = run
    holding = [runs for runs in by_project.values() if set(names) <= set(runs)]
    if len(holding) == 1:
        return holding[0][names[0]], holding[0][names[1]]
    if len(holding) > 1:
        slugs = ", ".join(sorted(runs[names[0]].project.slug for runs in holding))
        raise CommandError(f"runs {names[0]!r} and {names[1]!r} exist in several projects ({slugs}): "
                           "pass --project SLUG")
    known = {name for runs in by_project.values() for name in runs}
    missing = [name for name in names if name not in known]
    if missing:
        raise CommandError(f"no run {missing[0]!r} in any project")
    raise CommandError("the two runs belong to different projects; compare runs of one project")


class Command(BaseCommand):
    help = "Compare run B against run A on the questions both answered: metric deltas and the claims behind them."
    requires_system_checks = DATA_COMMAND_CHECKS

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--run", action="append", required=True, metavar="NAME",
                            help="give twice: --run A --run B (deltas are B − A)")
        parser.add_argument("--project", help="project slug (default: the project holding both runs)")
        parser.add_argument("--format", choices=["json", "table", "xlsx"], default="table")
        parser.add_argument("-o", "--output", help="write to this file (required for xlsx)")
        parser.add_argument("--threshold", type=float, default=DEFAULT_THRESHOLD,
                            help=f"fuzzy claim alignment similarity in (0, 1] (default {DEFAULT_THRESHOLD})")
        parser.add_argument("--confidence", type=float, default=DEFAULT_CONFIDENCE, metavar="LEVEL",
                            help="level of the deltas' paired intervals (default 0.95; JSON key ci95 at 0.95, "
                                 "else ci with level)")

    def handle(self, *args, **options) -> None:
        names = options["run"]
        if len(names) != 2:
            raise CommandError(f"give exactly two runs: --run A --run B (got {len(names)})")
        if options["format"] == "xlsx" and not options["output"]:
            raise CommandError("--format xlsx needs -o PATH")
        run_a, run_b = find_runs(names, options["project"])
        try:
            comparison = run_comparison(run_a=run_a, run_b=run_b, threshold=options["threshold"],
                                        confidence=options["confidence"])
        except ValidationError as error:
            raise CommandError(" ".join(error.messages)) from None
        if options["format"] == "xlsx":
            Path(options["output"]).write_bytes(comparison_xlsx(comparison))
            self.stderr.write(self.style.SUCCESS(f"wrote {options['output']}"))
            return
        text = (json.dumps(comparison.to_dict(), indent=2, ensure_ascii=False) if options["format"] == "json"
                else render_table(comparison))
        if options["output"]:
            Path(options["output"]).write_text(text + "\n", encoding="utf-8")
            self.stderr.write(self.style.SUCCESS(f"wrote {options['output']}"))
        else:
            self.stdout.write(text)


def render_table(comparison: RunComparison) -> str:
    """Plain-text report: summary deltas, claim counts, then the named claims."""
    result = comparison.result
    lines = [
        f"project {comparison.project.slug}: B {comparison.run_b.name} vs A {comparison.run_a.name}",
        f"shared questions {len(result.shared_questions)} (only A: {len(result.only_a)}, only B: "
        f"{len(result.only_b)}); alignment threshold {result.threshold}",
        "",
        f"{'metric':<28} {'A':>30} {'B':>30} {'delta':>8} {interval_label(result.confidence):>22}  verdict",
    ]
    for row in result.summary:
        lines.append(f"{row.label:<28} {row.a_text:>30} {row.b_text:>30} {format_delta(row.delta):>8} "
                     f"{interval_text(row.difference):>22}  {noise_verdict(row)}")
    counts = result.counts()
    lines += [
        "",
        f"claims: {counts['aligned']} aligned ({counts['exact']} same text, {counts['fuzzy']} similar), "
        f"{counts['label_flips']} label flips, {counts['citation_changes']} citation changes, "
        f"{counts['added']} added, {counts['removed']} removed",
    ]
    sections = (
        ("Label flips", "label_flips", lambda r: f"{r['label_a']} -> {r['label_b']}: {r['claim_a']}"),
        ("Citation changes", "citation_changes", lambda r: (
            f"{r['change']}: {r['claim_a']}"
            + (f" | lost {', '.join(r['sources_lost'])}" if r["sources_lost"] else "")
            + (f" | gained {', '.join(r['sources_gained'])}" if r["sources_gained"] else ""))),
        ("Added claims (B)", "added", lambda r: f"#{r['claim_index_b']} {r['claim_b']}"),
        ("Removed claims (A)", "removed", lambda r: f"#{r['claim_index_a']} {r['claim_a']}"),
    )
    for title, attr, describe in sections:
        rows = comparison.claim_rows(attr, limit=TABLE_LIMIT)
        total = counts[attr]
        if not total:
            continue
        lines += ["", f"{title} ({total}{f', first {TABLE_LIMIT}' if total > TABLE_LIMIT else ''}):"]
        lines += [f"  {row['question_id']}  {describe(row)}" for row in rows]
    return "\n".join(lines)
