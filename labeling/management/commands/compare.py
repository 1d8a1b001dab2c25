"""``python manage.py compare --run A --run B [--project SLUG] [--format json|table|xlsx] [-o PATH]
[--threshold 0.85] [--confidence 0.95] [--estimate ppi [--judge NAME]]``: run B against run A on the
questions both answered (SPEC §5), each delta with its paired interval (SPEC §4.5); with
``--estimate ppi`` also B − A of the runs' judge-assisted estimates (SPEC §4.6, independent
samples: variances add)."""

from __future__ import annotations

import json
from pathlib import Path

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from labeling.management import DATA_COMMAND_CHECKS
from labeling.management.lookup import find_project, find_run, reviewer_name
from labeling.models import Run
from labeling.scores.estimates import (
    ESTIMATE_CHOICES,
    EstimateError,
    command_estimates,
    difference_words,
    estimate_differences,
    require_estimates,
)
from labeling.tables.comparison import RunComparison, comparison_xlsx, interval_label, noise_verdict, run_comparison
from scoring.compare import DEFAULT_THRESHOLD
from scoring.deltas import format_delta
from scoring.figures import interval_text
from scoring.intervals import DEFAULT_CONFIDENCE
from scoring.ratio import format_value

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
        parser.add_argument("--estimate", choices=ESTIMATE_CHOICES,
                            help="also compare the runs' judge-assisted estimates (PPI++ on each run's "
                                 "probability sample, SPEC §4.6): JSON key estimate_differences")
        parser.add_argument("--judge", type=reviewer_name,
                            help="with --estimate: the judge whose labels both runs' estimates use (default: "
                                 "each run's promoted judge, else its only judge)")

    def handle(self, *args, **options) -> None:
        names = options["run"]
        if len(names) != 2:
            raise CommandError(f"give exactly two runs: --run A --run B (got {len(names)})")
        if options["format"] == "xlsx" and not options["output"]:
            raise CommandError("--format xlsx needs -o PATH")
        if options["judge"] and not options["estimate"]:
            raise CommandError("--judge picks the judge of the estimates: give --estimate ppi too")
        if options["estimate"] and options["format"] == "xlsx":
            raise CommandError("--estimate ppi prints json or table, not xlsx")
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
        estimated = self._estimates(run_a, run_b, options) if options["estimate"] else None
        if options["format"] == "json":
            result = comparison.to_dict()
            if estimated is not None:
                result["estimate_differences"] = {key: d.as_dict() for key, d in estimated[2].items()}
            text = json.dumps(result, indent=2, ensure_ascii=False)
        else:
            text = render_table(comparison) + (render_estimates(*estimated) if estimated is not None else "")
        if options["output"]:
            Path(options["output"]).write_text(text + "\n", encoding="utf-8")
            self.stderr.write(self.style.SUCCESS(f"wrote {options['output']}"))
        else:
            self.stdout.write(text)


    def _estimates(self, run_a: Run, run_b: Run, options):
        """Both runs' estimates and their differences, or CommandError saying what a run lacks."""
        try:
            a, b = (require_estimates(run, command_estimates(run, judge_name=options["judge"], reviewer=None,
                                                             confidence=options["confidence"]))
                    for run in (run_a, run_b))
        except (EstimateError, ValueError) as exc:
            raise CommandError(str(exc)) from None
        return a, b, estimate_differences(a, b)


def render_estimates(a, b, differences) -> str:
    """B − A of the runs' estimates, each with its interval and whether it is beyond noise."""
    lines = ["", f"estimates (PPI++; judges {a.judge} and {b.judge}; independent samples: variances add)"]
    for key, difference in differences.items():
        if not difference.defined:
            verdict = ""
        elif difference.low > 0 or difference.high < 0:
            verdict = "  beyond noise"
        else:
            verdict = "  within noise"
        estimate_a, estimate_b = (format_value(getattr(side, key).estimate, 4) for side in (a, b))
        lines.append(f"  {key:<16}A {estimate_a}  B {estimate_b}  B − A "
                     f"{difference_words(difference, a, b, key)}{verdict}")
    return "\n".join(lines)


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
