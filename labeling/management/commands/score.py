"""``python manage.py score --run NAME [--project SLUG] [--reviewer NAME] --format json|table
[--citation-precision-rule strict|union|lenient]``, or ``score --project SLUG --all-runs
--format json|table|xlsx [-o PATH]``: one row per run and their unweighted mean.

With ``--baseline A --max-drop support=0.05 …`` it is a CI gate: exit status 1,
naming the metric and the numbers, when the run falls more than the allowed
drop below the baseline run. ``--baseline`` needs at least one ``--max-drop``:
a gate without a bound would pass whatever the run scored, and a silent
default bound would pass or fail on a number the CI file never states. The
verdict names every bound it applied.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from labeling.estimates import EstimateError, command_estimates, estimates_lines
from labeling.exports.summary import summary_xlsx
from labeling.management.lookup import find_project, find_run, reviewer_name
from labeling.metrics import DEFAULT_MATCH_METHOD, RunScores, project_summary, run_scores
from labeling.models import Project, Question, Reviewer, Run
from scoring.judgments import DEFAULT_RULE, RULES
from scoring.ratio import Ratio, format_value
from scoring.summary import RATIO_COLUMNS, RunSummary, mean_row, summary_table

# Metric name → path in RunScores.to_dict(); all are "higher is better".
GATE_METRICS: dict[str, tuple[str, ...]] = {
    "coverage": ("claims", "coverage"),
    "support": ("claims", "support"),
    "mean_coverage": ("claims", "mean_coverage"),
    "mean_support": ("claims", "mean_support"),
    "supported_rate": ("claims", "supported_rate"),
    "judged_precision": ("citation_judgments", "precision"),
    "precision": ("citation_ids", "precision"),
    "recall": ("citation_ids", "recall"),
    "context_precision": ("context", "precision"),
    "context_recall": ("context", "recall"),
    "context_f1": ("context", "f1"),
    "source_precision": ("source", "precision"),
    "source_recall": ("source", "recall"),
    "source_f1": ("source", "f1"),
}


def parse_max_drop(values: list[str]) -> dict[str, float]:
    """``["support=0.05", …]`` → ``{"support": 0.05}``; CommandError naming a bad item."""
    drops: dict[str, float] = {}
    for item in values:
        name, sep, number = item.partition("=")
        name = name.strip()
        if not sep or name not in GATE_METRICS:
            raise CommandError(f"--max-drop {item!r}: use METRIC=NUMBER with METRIC one of {', '.join(GATE_METRICS)}")
        try:
            drops[name] = float(number)
        except ValueError:
            raise CommandError(f"--max-drop {item!r}: {number!r} is not a number") from None
        # NaN compares false with everything: a NaN drop would let every run pass.
        if not math.isfinite(drops[name]):
            raise CommandError(f"--max-drop {item!r}: the allowed drop must be a finite number")
        if drops[name] < 0:
            raise CommandError(f"--max-drop {item!r}: the allowed drop cannot be negative")
    return drops


def metric_value(scores: dict[str, Any], name: str) -> float | None:
    section, key = GATE_METRICS[name]
    return scores.get(section, {}).get(key)


class Command(BaseCommand):
    help = "Citation metrics of a run (SPEC §4) as JSON or a table; optionally gate on a baseline run."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--run", help="the run to score (or --all-runs)")
        parser.add_argument("--all-runs", action="store_true",
                            help="one row per run of the project and their unweighted mean (SPEC §4.3b)")
        parser.add_argument("-o", "--output", help="write to this file (required for --format xlsx)")
        parser.add_argument("--project", help="project slug (default: the only project)")
        parser.add_argument("--reviewer", type=reviewer_name, help="count only this reviewer's labels")
        parser.add_argument("--format", choices=["json", "table", "xlsx"], default="table",
                            help="xlsx: with --all-runs only, written to -o PATH")
        parser.add_argument("--match-method", default=DEFAULT_MATCH_METHOD,
                            help="passage match method for gold metrics: substring, ngram, embeddings, llm")
        parser.add_argument("--match-threshold", type=float, default=None)
        parser.add_argument("--citation-precision-rule", choices=RULES, default=DEFAULT_RULE,
                            help="which judged citations are precise (SPEC §4.3b): strict (FULL only), union "
                                 "(FULL, or PARTIAL on a SUPPORTED claim; default) or lenient (FULL or PARTIAL)")
        parser.add_argument("--judge", type=reviewer_name,
                            help="the judge whose labels the estimates use (SPEC §4.6; default: the promoted "
                                 "judge, else the run's only judge)")
        parser.add_argument("--baseline", help="baseline run to gate against (CI)")
        parser.add_argument("--max-drop", action="append", default=[], metavar="METRIC=X",
                            help="fail when METRIC falls more than X below the baseline (repeatable)")

    def handle(self, *args, **options) -> None:
        project = find_project(options["project"])
        if options["all_runs"]:
            self._all_runs(project, options)
            return
        if not options["run"]:
            raise CommandError("give --run NAME, or --all-runs for every run of the project")
        if options["format"] == "xlsx":
            raise CommandError("--format xlsx is for --all-runs; score one run as json or table")
        run = find_run(project, options["run"])
        reviewer = options["reviewer"]
        if reviewer and not Reviewer.objects.filter(username=reviewer).exists():
            raise CommandError(f"no reviewer {reviewer!r}")
        threshold = options["match_threshold"]
        if threshold is not None and not 0 <= threshold <= 1:
            raise CommandError(f"--match-threshold {threshold}: must be between 0 and 1")
        if options["baseline"] == options["run"]:
            raise CommandError("--baseline names the run itself: gate against another run")
        drops = parse_max_drop(options["max_drop"])
        if drops and not options["baseline"]:
            raise CommandError("--max-drop needs --baseline RUN")
        if options["baseline"] and not drops:
            raise CommandError(
                "--baseline needs at least one --max-drop METRIC=X (e.g. --max-drop support=0.05 --max-drop "
                f"coverage=0.05): without a bound the gate would pass whatever {options['run']} scored. "
                f"Metrics: {', '.join(GATE_METRICS)}"
            )
        shared = None
        if options["baseline"]:
            baseline_run = find_run(project, options["baseline"])
            # SPEC §5: runs are compared on the questions both answered.
            shared = shared_question_ids(baseline_run, run)
            if not shared:
                raise CommandError(f"runs {run.name!r} and {baseline_run.name!r} answer no question in common: "
                                   "nothing to gate on")
        scores = self._scores(run, options, shared)
        estimates = self._estimates(run, options)
        if options["format"] == "json":
            self.stdout.write(json.dumps(with_estimates(scores.to_dict(), estimates), indent=2, ensure_ascii=False))
        else:
            self.stdout.write(render_table(scores) + ("\n" + "\n".join(estimates_lines(estimates))
                                                      if estimates is not None else ""))
        if options["baseline"]:
            baseline = self._scores(baseline_run, options, shared)
            failures = gate(baseline.to_dict(), scores.to_dict(), drops)
            bounds = ", ".join(f"{name} may drop ≤ {drop:g}" for name, drop in drops.items())
            note = f"on the {len(shared)} question(s) both runs answered ({bounds})"
            for name, result in ((run.name, scores), (baseline_run.name, baseline)):
                if result.claims.pending and any(m in drops for m in ("support", "mean_support")):
                    note += f"; support of {name} is provisional ({result.claims.pending} cited claim(s) pending)"
            if failures:
                raise CommandError(f"CI gate failed {note}:\n" + "\n".join(failures), returncode=1)
            self.stderr.write(self.style.SUCCESS(f"CI gate passed: {run.name} vs baseline {baseline_run.name} {note}"))

    def _estimates(self, run: Run, options: dict[str, Any]):
        """The run's judge-assisted estimates (SPEC §4.6), or ``None``; CommandError naming a bad ``--judge``."""
        try:
            return command_estimates(run, judge_name=options["judge"], reviewer=options["reviewer"],
                                     confidence=options.get("confidence") or 0.95)
        except EstimateError as exc:
            raise CommandError(str(exc)) from None

    def _all_runs(self, project: Project, options: dict[str, Any]) -> None:
        if options["run"] or options["baseline"] or options["max_drop"] or options["judge"]:
            raise CommandError("--all-runs scores every run: drop --run, --baseline, --max-drop and --judge")
        if options["format"] == "xlsx" and not options["output"]:
            raise CommandError("--format xlsx needs -o PATH")
        reviewer = options["reviewer"]
        if reviewer and not Reviewer.objects.filter(username=reviewer).exists():
            raise CommandError(f"no reviewer {reviewer!r}")
        rule = options.get("citation_precision_rule") or DEFAULT_RULE
        try:
            runs = project_summary(project, reviewer=reviewer, rule=rule)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        if options["format"] == "xlsx":
            Path(options["output"]).write_bytes(summary_xlsx(project=project, runs=runs, rule=rule))
            self.stderr.write(self.style.SUCCESS(f"wrote {options['output']}"))
            return
        if options["format"] == "json":
            text = json.dumps({"project": project.slug, "reviewer": reviewer, "citation_precision_rule": rule,
                               "runs": summary_table(runs)}, indent=2, ensure_ascii=False)
        else:
            text = render_summary_table(project, runs, rule)
        if options["output"]:
            Path(options["output"]).write_text(text + "\n", encoding="utf-8")
            self.stderr.write(self.style.SUCCESS(f"wrote {options['output']}"))
        else:
            self.stdout.write(text)

    def _scores(self, run: Run, options: dict[str, Any], question_ids: set[str] | None = None) -> RunScores:
        try:
            return run_scores(run, reviewer=options["reviewer"], match_method=options["match_method"],
                              match_threshold=options["match_threshold"], question_ids=question_ids,
                              citation_precision_rule=options.get("citation_precision_rule") or DEFAULT_RULE)
        except (ValueError, ImportError) as exc:
            raise CommandError(str(exc)) from None


def with_estimates(scores: dict[str, Any], estimates) -> dict[str, Any]:
    """``scores`` (``RunScores.to_dict()``) with ``estimates`` (issue 23 §2) before ``per_answer``."""
    if estimates is None:
        return scores
    out = {key: value for key, value in scores.items() if key != "per_answer"}
    out["estimates"] = estimates.to_dict()
    out["per_answer"] = scores["per_answer"]
    return out


def shared_question_ids(a: Run, b: Run) -> set[str]:
    """``question_id`` values answered by both runs (SPEC §5)."""
    return set(
        Question.objects.filter(answers__run=a).filter(answers__run=b).values_list("question_id", flat=True)
    )


def gate(baseline: dict[str, Any], candidate: dict[str, Any], drops: dict[str, float]) -> list[str]:
    """Failures of ``candidate`` against ``baseline`` (both ``RunScores.to_dict()``).

    A metric fails when ``candidate < baseline − max_drop`` (compared on the
    exact ratios), or when the baseline has a value and the candidate's is
    undefined. A metric undefined on the baseline cannot be gated and is
    reported as a failure too, so a misconfigured gate never passes silently.
    """
    failures = []
    for name, max_drop in drops.items():
        before, after = metric_value(baseline, name), metric_value(candidate, name)
        label = f"{name}: {candidate['run']} {format_value(after, 4)} vs baseline {baseline['run']} "
        if before is None:
            failures.append(label + f"{format_value(before, 4)} (undefined on the baseline; cannot gate)")
        elif after is None:
            failures.append(label + f"{format_value(before, 4)} (undefined on the run)")
        elif before - after > max_drop + 1e-12:
            failures.append(label + f"{format_value(before, 4)}: dropped {before - after:.4f} > allowed {max_drop:.4f}")
    return failures


def render_table(scores: RunScores) -> str:
    """Plain-text report of a run's metrics for a person (fractions beside ratios)."""
    c = scores.claims
    ids = scores.citation_ids
    lines = [
        f"Run {scores.run.name} (project {scores.run.project.slug})"
        + (f", labels of {scores.reviewer}" if scores.reviewer else ", agreed labels"),
        f"  answers {c.answers}, claims {c.claims}, cited {c.cited}, labeled cited {c.labeled_cited}, "
        f"pending {c.pending}, reviewer disagreements {scores.disagreements}",
        "",
        f"  {'metric':<22}{'pooled':>22}{'per-answer mean':>22}",
        f"  {'coverage':<22}{str(c.coverage):>22}{_mean(c.mean_coverage, c.coverage_skipped):>22}",
        f"  {'support':<22}{str(c.support):>22}{_mean(c.mean_support, c.support_skipped):>22}",
        f"  {'gap':<22}{format_value(c.gap):>22}",
        f"  {'supported rate':<22}{str(c.supported_rate):>22}"
        f"{_mean(c.mean_supported_rate, c.supported_rate_skipped):>22}",
        f"  {'citation precision':<22}{str(ids.precision):>22}{_mean(ids.mean_precision, None):>22}",
        f"  {'citation recall':<22}{str(ids.recall):>22}{_mean(ids.mean_recall, None):>22}",
        f"  {'fabricated':<22}{str(ids.fabricated_rate):>22}",
        f"  {'abstention':<22}{str(scores.abstention.rate):>22}",
    ]
    j = scores.judgments
    if j is not None and j.judged:
        lines.append(f"  {'judged precision':<22}{str(j.precision):>22}"
                     f"{_mean(j.mean_precision, j.precision_skipped):>22}")
        lines.append(f"    rule {j.rule}; judged {j.judged} of {j.citations} citation(s): "
                     + ", ".join(f"{value} {count}" for value, count in j.counts.items())
                     + (f"; {j.disputed} disputed" if j.disputed else ""))
    if c.non_factual:
        lines.append(f"  {c.non_factual} non-factual claim(s) left out of every count")
    if scores.gold is not None:
        gold = scores.gold.to_dict()
        context, source = gold["context"], gold["source"]
        fractions = {
            "context precision": Ratio(context["matched_citations"], context["citations"]),
            "context recall": Ratio(context["matched_references"], context["references"]),
            "context f1": None,
            "source precision": Ratio(source["matched_cited_sources"], source["cited_sources"]),
            "source recall": Ratio(source["matched_expected_sources"], source["expected_sources"]),
            "source f1": None,
        }
        for name, fraction in fractions.items():
            level, metric = name.split()
            pooled = str(fraction) if fraction is not None else format_value(gold[level][metric])
            lines.append(f"  {name:<22}{pooled:>22}{format_value(gold[level]['mean_' + metric]):>22}")
        if context["pending"]:
            lines.append(f"  context metrics leave out {context['pending']} answer(s) the matcher could not judge")
    if c.pending:
        disputed = scores.disagreements
        detail = f"{c.pending - disputed} unlabeled, {disputed} disputed" if disputed else "unlabeled"
        lines.append("")
        lines.append(f"  support is provisional: {c.pending} cited claim(s) pending ({detail})")
    return "\n".join(lines)


def render_summary_table(project: Project, runs: list[RunSummary], rule: str) -> str:
    """Every run of the project side by side, the unweighted mean last (fractions beside ratios)."""
    header = ["run", "answers", "claims", "coverage", "support", "supported rate", f"precision ({rule})", "gap"]
    rows = [[r.run, str(r.answers), str(r.claims), str(r.coverage), str(r.support), str(r.supported_rate),
             str(r.citation_precision), format_value(r.gap)] for r in runs]
    mean = mean_row(runs)
    rows.append([mean["run"], format_value(mean["answers"], 1), format_value(mean["claims"], 1),
                 *(format_value(mean[name]) for name in RATIO_COLUMNS), format_value(mean["gap"])])
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    lines = [f"Project {project.slug}: {len(runs)} run(s); mean = unweighted mean of the runs"]
    for k, row in enumerate([header, *rows]):
        if k == len(rows):  # the mean row
            lines.append("  " + "  ".join("-" * w for w in widths))
        lines.append("  " + "  ".join(cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in
                                      enumerate(zip(row, widths, strict=True))))
    return "\n".join(lines)


def _mean(value: float | None, skipped: int | None) -> str:
    text = format_value(value)
    return f"{text} ({skipped} skipped)" if skipped else text
