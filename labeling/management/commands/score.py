"""``python manage.py score --run NAME [--project SLUG] [--reviewer NAME] --format json|table
[--citation-precision-rule strict|union|lenient]``, or ``score --project SLUG --all-runs
--format json|table|xlsx [-o PATH]``: one row per run and their unweighted mean.

With ``--baseline A --max-drop support=0.05 …`` it is a CI gate: exit status 1,
naming the metric and the numbers, when the run falls more than the allowed
drop below the baseline run. ``--baseline`` needs at least one ``--max-drop``:
a gate without a bound would pass whatever the run scored, and a silent
default bound would pass or fail on a number the CI file never states. The
verdict names every bound it applied, and each gated metric's paired
difference B − A with its interval (SPEC §4.5), warning "within noise" when
the interval straddles the bound. With ``--confidence C`` the gate is a
non-inferiority test instead: it passes only when the lower bound of the
C-interval of B − A is at or above −max_drop, and a failure says how many more
labeled answers would settle it.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from labeling.exports.summary import summary_xlsx
from labeling.management import DATA_COMMAND_CHECKS
from labeling.management.lookup import find_project, find_run, reviewer_name
from labeling.models import Project, Question, Reviewer, Run
from labeling.scores.estimates import (
    ESTIMATE_CHOICES,
    METRICS,
    EstimateError,
    command_estimates,
    difference_words,
    estimate_differences,
    estimate_gate,
    estimates_lines,
    require_estimates,
)
from labeling.scores.metrics import DEFAULT_MATCH_METHOD, RunScores, project_summary, run_scores
from scoring.budgets import non_inferior, settle_budget
from scoring.deltas import format_delta
from scoring.figures import FigureInterval, interval_text, paired_differences
from scoring.intervals import DEFAULT_CONFIDENCE, PairedDifference, check_confidence
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


# Gate metrics without an interval (F1 of pooled figures is not a ratio of counts).
NO_INTERVAL = frozenset({"context_f1", "source_f1"})


def parse_confidence(value: float | None) -> float | None:
    """``--confidence`` checked: a level strictly between 0 and 1, or ``None`` when not given."""
    if value is None:
        return None
    try:
        return check_confidence(value)
    except ValueError as exc:
        raise CommandError(f"--confidence {value}: {exc}") from None


def metric_value(scores: dict[str, Any], name: str) -> float | None:
    section, key = GATE_METRICS[name]
    return scores.get(section, {}).get(key)


class Command(BaseCommand):
    help = "Citation metrics of a run (SPEC §4) as JSON or a table; optionally gate on a baseline run."
    requires_system_checks = DATA_COMMAND_CHECKS

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
        parser.add_argument("--estimate", choices=ESTIMATE_CHOICES,
                            help="gate on the runs' judge-assisted estimates (PPI++ on each run's probability "
                                 "sample, SPEC §4.6) instead of the human labels: support and supported_rate only")
        parser.add_argument("--baseline", help="baseline run to gate against (CI)")
        parser.add_argument("--max-drop", action="append", default=[], metavar="METRIC=X",
                            help="fail when METRIC falls more than X below the baseline (repeatable)")
        parser.add_argument("--confidence", type=float, default=None, metavar="LEVEL",
                            help="level of the intervals (default 0.95; JSON key ci95 at 0.95, else ci with "
                                 "level); with --baseline the gate passes only when the lower bound of B − A "
                                 "is at or above −max_drop (non-inferiority)")

    def handle(self, *args, **options) -> None:
        project = find_project(options["project"])
        confidence = parse_confidence(options["confidence"])
        options["level"] = confidence if confidence is not None else DEFAULT_CONFIDENCE
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
        if confidence is not None and NO_INTERVAL & set(drops):
            names = ", ".join(sorted(NO_INTERVAL & set(drops)))
            raise CommandError(f"--max-drop {names} with --confidence: F1 of pooled figures has no interval (it is "
                               "not a ratio of counts); gate it without --confidence")
        if drops and not options["baseline"]:
            raise CommandError("--max-drop needs --baseline RUN")
        if options["baseline"] and not drops:
            raise CommandError(
                "--baseline needs at least one --max-drop METRIC=X (e.g. --max-drop support=0.05 --max-drop "
                f"coverage=0.05): without a bound the gate would pass whatever {options['run']} scored. "
                f"Metrics: {', '.join(GATE_METRICS)}"
            )
        if options["estimate"]:
            check_estimate_gate(options, drops)
        shared = None
        if options["baseline"]:
            baseline_run = find_run(project, options["baseline"])
            # SPEC §5: runs are compared on the questions both answered.
            shared = shared_question_ids(baseline_run, run)
            if not shared:
                raise CommandError(f"runs {run.name!r} and {baseline_run.name!r} answer no question in common: "
                                   "nothing to gate on")
        scores = self._scores(run, options, shared)
        # The claims score read already, when they are the whole run's (not cut to shared questions).
        estimates = self._estimates(run, options, claims=scores.claims_frame if shared is None else None)
        baseline = differences = baseline_estimates = None
        if options["estimate"]:
            # Each run's estimate is of the whole run (its own sample): not cut to the shared questions.
            try:
                estimates = require_estimates(run, estimates)
                baseline_estimates = require_estimates(baseline_run, self._estimates(baseline_run, options))
            except EstimateError as exc:
                raise CommandError(str(exc)) from None
        if options["baseline"]:
            baseline = self._scores(baseline_run, options, shared)
            differences = paired_differences(baseline.figures(), scores.figures(), questions=sorted(shared),
                                             confidence=options["level"])
        if options["format"] == "json":
            result = with_estimates(scores.to_dict(), estimates)
            if differences is not None:
                result["baseline"] = baseline_run.name
                result["differences"] = {key: d.as_dict() for key, d in differences.items()}
            if baseline_estimates is not None:
                result["estimate_differences"] = {
                    key: d.as_dict() for key, d in estimate_differences(baseline_estimates, estimates).items()}
            self.stdout.write(json.dumps(result, indent=2, ensure_ascii=False))
        else:
            self.stdout.write(render_table(scores))
            if estimates is not None:
                self.stdout.write("\n".join(estimates_lines(estimates)))
            if differences is not None:
                self.stdout.write(render_differences(baseline_run.name, run.name, differences, len(shared)))
            if baseline_estimates is not None:
                self.stdout.write("\n".join(["", f"  B {run.name} − A {baseline_run.name} on their estimates "
                                                  "(independent samples: variances add)"] + [
                    f"  {key:<16}{difference_words(d, baseline_estimates, estimates, key)}"
                    for key, d in estimate_differences(baseline_estimates, estimates).items()]))
        if baseline_estimates is not None:
            self._gate_on_estimates(run, baseline_run, estimates, baseline_estimates, drops, confidence)
            return
        if options["baseline"]:
            bounds = ", ".join(f"{name} may drop ≤ {drop:g}" for name, drop in drops.items())
            note = f"on the {len(shared)} question(s) both runs answered ({bounds})"
            for name, result in ((run.name, scores), (baseline_run.name, baseline)):
                if result.claims.pending and any(m in drops for m in ("support", "mean_support")):
                    note += f"; support of {name} is provisional ({result.claims.pending} cited claim(s) pending)"
            if confidence is not None:
                failures = interval_gate(baseline_run.name, run.name, differences, drops, available=len(shared))
                note += f"; {format_value(confidence * 100, 0)}% interval of B − A must stay above −max drop"
            else:
                failures = gate(baseline.to_dict(), scores.to_dict(), drops)
            # The point rule's verdict keeps its words; beside it, each gated metric's interval.
            lines = noise_lines(differences, drops)
            if failures:
                if confidence is None and lines:
                    self.stderr.write("\n".join(lines))
                raise CommandError(f"CI gate failed {note}:\n" + "\n".join(failures), returncode=1)
            self.stderr.write(self.style.SUCCESS(f"CI gate passed: {run.name} vs baseline {baseline_run.name} {note}"
                                                 + "".join(f"\n{line}" for line in lines)))

    def _gate_on_estimates(self, run: Run, baseline_run: Run, estimates, baseline_estimates,
                           drops: dict[str, float], confidence: float | None) -> None:
        """The CI gate on the two runs' estimates (SPEC §4.6): exit status 1 naming each failure."""
        bounds = ", ".join(f"{name} may drop ≤ {drop:g}" for name, drop in drops.items())
        note = (f"on the runs' PPI++ estimates (judges {baseline_estimates.judge} and {estimates.judge}; "
                f"{bounds})")
        if confidence is not None:
            note += f"; {format_value(confidence * 100, 0)}% interval of B − A must stay above −max drop"
        failures = estimate_gate(baseline_run.name, run.name, baseline_estimates, estimates, drops,
                                 interval=confidence is not None)
        if failures:
            raise CommandError(f"CI gate failed {note}:\n" + "\n".join(failures), returncode=1)
        self.stderr.write(self.style.SUCCESS(f"CI gate passed: {run.name} vs baseline {baseline_run.name} {note}"))

    def _estimates(self, run: Run, options: dict[str, Any], claims=None):
        """The run's judge-assisted estimates (SPEC §4.6), or ``None``; CommandError naming a bad ``--judge``."""
        try:
            return command_estimates(run, judge_name=options["judge"], reviewer=options["reviewer"],
                                     confidence=options.get("level", DEFAULT_CONFIDENCE), claims=claims)
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
            runs = project_summary(project, reviewer=reviewer, rule=rule, confidence=options["level"])
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
                              citation_precision_rule=options.get("citation_precision_rule") or DEFAULT_RULE,
                              confidence=options.get("level", DEFAULT_CONFIDENCE))
        except (ValueError, ImportError) as exc:
            raise CommandError(str(exc)) from None


def check_estimate_gate(options: dict[str, Any], drops: dict[str, float]) -> None:
    """``--estimate ppi`` needs ``--baseline`` and gates only the estimated figures; CommandError otherwise."""
    if not options["baseline"]:
        raise CommandError("--estimate ppi gates on the runs' estimates: give --baseline RUN and --max-drop")
    if options["reviewer"]:
        raise CommandError("--estimate ppi: the estimates use the humans' agreed labels, not one reviewer's: "
                           "drop --reviewer")
    others = sorted(set(drops) - set(METRICS))
    if others:
        raise CommandError(f"--max-drop {', '.join(others)} with --estimate ppi: the estimates cover "
                           f"{' and '.join(METRICS)} only; gate the others in a run without --estimate")


def with_estimates(scores: dict[str, Any], estimates) -> dict[str, Any]:
    """``scores`` (``RunScores.to_dict()``) with ``estimates`` (SPEC §4.6) before ``per_answer``."""
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
            failures.append(label + f"{format_value(before, 4)}: dropped {format_value(before - after, 4)} > "
                                    f"allowed {format_value(max_drop, 4)}")
    return failures


def difference_text(difference: PairedDifference | None) -> str:
    """``"−0.0200 (95% interval −0.1000 to +0.0600, 12 questions)"`` for a verdict."""
    if difference is None or difference.delta is None:
        return "undefined"
    level = f"{format_value(difference.level * 100, 0)}% interval"
    if not difference.defined:
        return (f"{format_delta(difference.delta, 4)} (no {level}: {difference.n_questions} question(s) with a "
                "unit, it takes two)")
    return (f"{format_delta(difference.delta, 4)} ({level} {format_delta(difference.low, 4)} to "
            f"{format_delta(difference.high, 4)}, {difference.n_questions} questions)")


def noise_lines(differences: dict[str, PairedDifference], drops: dict[str, float]) -> list[str]:
    """One line per gated metric: its B − A with the interval, and "within noise" when
    the interval straddles the bound −max_drop (the point verdict could go either way)."""
    lines = []
    for name, max_drop in drops.items():
        difference = differences.get(name)
        if name in NO_INTERVAL or difference is None:
            continue
        line = f"  {name}: B − A {difference_text(difference)}"
        if difference.defined and difference.low < -max_drop < difference.high:
            line += f"; within noise: the interval straddles the bound −{max_drop:g}"
        lines.append(line)
    return lines


def interval_gate(baseline: str, candidate: str, differences: dict[str, PairedDifference],
                  drops: dict[str, float], *, available: int) -> list[str]:
    """Failures of the non-inferiority gate (SPEC §4.5): a metric fails unless the
    lower bound of its B − A interval is ≥ −max_drop. A failure names the metric,
    the delta, its interval and how many more labeled answers (per run, at the
    current variance) would settle it; ``available``: the questions both runs answered."""
    failures = []
    for name, max_drop in drops.items():
        difference = differences.get(name)
        label = f"{name}: {candidate} vs baseline {baseline}: B − A {difference_text(difference)}"
        if difference is None or difference.delta is None:
            failures.append(label + " (undefined on a run; cannot gate)")
            continue
        if non_inferior(difference, max_drop):
            continue
        if not difference.defined:
            failures.append(label + "; label answers of at least two shared questions to get an interval")
            continue
        verdict = "lies below" if difference.high < -max_drop else "reaches below"
        settle = settle_text(difference, max_drop, available)
        failures.append(f"{label}: the interval {verdict} −{max_drop:g}; {settle}")
    return failures


def settle_text(difference: PairedDifference, max_drop: float, available: int) -> str:
    """How many more labeled answers would settle the gate, in words."""
    if difference.high < -max_drop:
        return "the drop is beyond noise: more answers would not change the verdict"
    budget = settle_budget(difference, max_drop, available=available)
    if budget is None:
        return "the delta sits on the bound: no number of answers settles it"
    if not budget.reachable:
        return (f"settling it takes about {budget.needed} questions labeled in both runs at the current variance, "
                f"more than the runs share ({available})")
    return (f"about {budget.more} more labeled answer(s) in each run ({budget.needed} questions in all, at the "
            "current variance) would settle it")


def render_differences(baseline: str, candidate: str, differences: dict[str, PairedDifference],
                       shared: int) -> str:
    """B − A of every figure on the shared questions, each with its paired interval."""
    lines = ["", f"  B {candidate} − A {baseline}, paired by question on the {shared} question(s) both answered",
             f"  {'metric':<26}{'A':>10}{'B':>10}{'delta (interval)':>34}{'questions':>11}"]
    for key, difference in differences.items():
        shown = f"{format_delta(difference.delta)} {interval_text(difference)}".strip()
        lines.append(f"  {key:<26}{format_value(difference.a):>10}{format_value(difference.b):>10}"
                     f"{shown:>34}{difference.n_questions:>11}")
    return "\n".join(lines)


def _with_interval(fraction: Any, entry: FigureInterval | None) -> str:
    """``"133/175 = 0.76 (0.64–0.85)"``: the fraction (or value) and its interval."""
    text = str(fraction) if not isinstance(fraction, float | type(None)) else format_value(fraction)
    ci = interval_text(entry.interval) if entry is not None else ""
    return f"{text} {ci}" if ci else text


def render_table(scores: RunScores) -> str:
    """Plain-text report of a run's metrics for a person: fractions beside ratios and,
    beside each figure, its interval (SPEC §4.5), then the label budget."""
    c = scores.claims
    ids = scores.citation_ids
    iv = scores.intervals()
    level = f"{format_value(scores.confidence * 100, 0)}%"

    def row(name: str, key: str, pooled: Any, mean: str | None = None) -> str:
        return f"  {name:<22}{_with_interval(pooled, iv.get(key)):>34}{mean or '':>32}"

    def mean(key: str, skipped: int | None) -> str:
        entry = iv.get(f"mean_{key}")
        text = _with_interval(entry.interval.estimate if entry else None, entry)
        return f"{text} ({skipped} skipped)" if skipped else text

    lines = [
        f"Run {scores.run.name} (project {scores.run.project.slug})"
        + (f", labels of {scores.reviewer}" if scores.reviewer else ", agreed labels"),
        f"  answers {c.answers}, claims {c.claims}, cited {c.cited}, labeled cited {c.labeled_cited}, "
        f"pending {c.pending}, reviewer disagreements {scores.disagreements}",
        f"  ({level} intervals; pooled ratios: Wilson at the effective size, answers as clusters; "
        "per-answer means: Student t)",
        "",
        f"  {'metric':<22}{'pooled':>34}{'per-answer mean':>32}",
        row("coverage", "coverage", c.coverage, mean("coverage", c.coverage_skipped)),
        row("support", "support", c.support, mean("support", c.support_skipped)),
        row("gap", "gap", c.gap),
        row("supported rate", "supported_rate", c.supported_rate, mean("supported_rate", c.supported_rate_skipped)),
        row("citation precision", "precision", ids.precision, mean("precision", None)),
        row("citation recall", "recall", ids.recall, mean("recall", None)),
        row("fabricated", "fabricated_rate", ids.fabricated_rate),
        row("abstention", "abstention", scores.abstention.rate),
    ]
    j = scores.judgments
    if j is not None and j.judged:
        lines.append(row("judged precision", "judged_precision", j.precision,
                         mean("judged_precision", j.precision_skipped)))
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
            group, metric = name.split()
            key = f"{group}_{metric}"
            pooled = fraction if fraction is not None else gold[group][metric]
            lines.append(row(name, key, pooled, mean(key, None)))
        if context["pending"]:
            lines.append(f"  context metrics leave out {context['pending']} answer(s) the matcher could not judge")
    budgets = [(key, entry) for key, entry in iv.items() if key in BUDGET_FIGURES and entry.budgets]
    if budgets:
        lines += ["", "  answers to label for a narrower interval, at the current variance:"]
        lines += [f"    {key}: {entry.budget_text}" for key, entry in budgets]
    if c.pending:
        disputed = scores.disagreements
        detail = f"{c.pending - disputed} unlabeled, {disputed} disputed" if disputed else "unlabeled"
        lines.append("")
        lines.append(f"  support is provisional: {c.pending} cited claim(s) pending ({detail})")
    return "\n".join(lines)


# The figures whose label budget the table prints (every one is under intervals in the JSON).
BUDGET_FIGURES = ("coverage", "support", "supported_rate", "judged_precision")


def render_summary_table(project: Project, runs: list[RunSummary], rule: str) -> str:
    """Every run of the project side by side, the unweighted mean last (fractions beside ratios,
    each with its interval)."""
    header = ["run", "answers", "claims", "coverage", "support", "supported rate", f"precision ({rule})", "gap"]
    rows = [[r.run, str(r.answers), str(r.claims),
             *(_with_interval(getattr(r, name), r.interval(name)) for name in RATIO_COLUMNS),
             _with_interval(r.gap, r.interval("gap"))] for r in runs]
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
