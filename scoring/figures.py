"""Every figure of a run with its interval and label budget, and paired differences
of two runs (SPEC §4.5).

The figures, by the names ``score --format json`` gives them under ``intervals``
(the names of ``score --max-drop``, where the gate has one):

- pooled ratios, cluster-robust Wilson (``wilson-clustered``): ``coverage``,
  ``support``, ``supported_rate``, ``judged_precision`` (citation precision of
  the judgments under the chosen rule), ``precision``/``recall`` (cited ids vs
  gold ids), ``fabricated_rate``, ``abstention``, ``context_precision``,
  ``context_recall``, ``source_precision``, ``source_recall``;
- ``gap`` = coverage − support, its linearized normal interval over the same
  answers (``paired-clustered``);
- per-answer means, Student-t (``student-t``): ``mean_<figure>`` for each
  per-answer ratio, F1 included (pooled F1 is not a ratio of counts: it has no
  interval).

Paired differences (run B − run A on the questions both answered) cover the
pooled ratios, the gap and the means, all through
:func:`scoring.intervals.paired_contrast`.

This module never imports Django.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scoring.budgets import BUDGET_HALF_WIDTHS, Budget, answers_needed
from scoring.citation_ids import AbstentionMetrics, CitationIdMetrics
from scoring.claims import ClaimMetrics
from scoring.deltas import format_delta
from scoring.gold import GoldMetrics
from scoring.intervals import (
    DEFAULT_CONFIDENCE,
    AnswerValues,
    Interval,
    PairedDifference,
    Units,
    check_confidence,
    contrast_interval,
    paired_contrast,
)
from scoring.judgments import JudgmentMetrics
from scoring.ratio import format_value

# What "more_answers_for" says where the run cannot reach the half-width.
MORE_THAN_THE_RUN_HOLDS = "more than the run holds"

# Display order of the pooled figures, and the words a page or table uses for them.
POOLED_LABELS = {
    "coverage": "coverage",
    "support": "support",
    "gap": "gap",
    "supported_rate": "supported rate",
    "judged_precision": "citation precision (judged)",
    "precision": "citation precision",
    "recall": "citation recall",
    "fabricated_rate": "fabricated",
    "abstention": "abstention",
    "context_precision": "context precision",
    "context_recall": "context recall",
    "source_precision": "source precision",
    "source_recall": "source recall",
}


@dataclass(frozen=True)
class RunFigures:
    """A run's per-answer units (pooled ratios) and per-answer values (means), by
    figure name (module docstring). Build with :func:`run_figures`."""

    units: dict[str, Units]
    values: dict[str, AnswerValues]


def run_figures(*, claims: ClaimMetrics, citation_ids: CitationIdMetrics | None = None,
                abstention: AbstentionMetrics | None = None, judgments: JudgmentMetrics | None = None,
                gold: GoldMetrics | None = None) -> RunFigures:
    """The figures a run's metrics define (module docstring). Sections left ``None``
    add nothing; ``citation_ids`` adds ``precision``/``recall`` only when some answer
    has gold ids, ``abstention`` only when some question is unanswerable."""
    units = dict(claims.units())
    values = dict(claims.answer_values())
    if judgments is not None:
        units |= judgments.units(available=units["support"].available)
        values |= judgments.answer_values()
    if citation_ids is not None:
        id_units = citation_ids.units()
        if citation_ids.gold_answers:
            units |= {"precision": id_units["precision"], "recall": id_units["recall"]}
            values |= citation_ids.answer_values()
        units["fabricated_rate"] = id_units["fabricated_rate"]
    if abstention is not None and abstention.unanswerable:
        units |= abstention.units()
    if gold is not None:
        units |= gold.units()
        values |= gold.answer_values()
    return RunFigures(units=units, values=values)


@dataclass(frozen=True)
class FigureInterval:
    """One figure's interval (:class:`~scoring.intervals.Interval`) and its label
    budget (``None`` without an interval)."""

    key: str
    interval: Interval
    budgets: list[Budget] | None

    def as_dict(self) -> dict[str, Any]:
        """``Interval.as_dict()`` plus ``more_answers_for``: ``{"0.05": N, "0.03": N,
        "0.02": N}`` answers to label beyond those counted for that half-width, or
        ``"more than the run holds"`` where the run's answers cannot reach it;
        and ``answers_needed``: the answers that half-width takes in all at the
        current variance. Both ``null`` without an interval (README "Intervals")."""
        needed = None if self.budgets is None else {format_value(b.half_width): b.needed for b in self.budgets}
        return {**self.interval.as_dict(), "more_answers_for": more_answers_for(self.budgets),
                "answers_needed": needed}

    @property
    def budget_text(self) -> str:
        """The label budget in words (:func:`budget_text`)."""
        return budget_text(self.budgets, counted=self.interval.n_answers)


def more_answers_for(budgets: Sequence[Budget] | None) -> dict[str, int | str] | None:
    """``{"0.05": more | "more than the run holds", …}`` of a label budget, ``None`` without one."""
    if budgets is None:
        return None
    return {format_value(b.half_width): (b.more if b.reachable else MORE_THAN_THE_RUN_HOLDS) for b in budgets}


def budget_text(budgets: Sequence[Budget] | None, *, counted: int = 0) -> str:
    """The label budget in words: ``"±0.05: 12 more answers · ±0.03: about 80 answers ·
    ±0.02: about 180 (more than the run holds: 60)"``; ``reached`` where the interval
    is already that narrow; ``""`` without a budget. ``counted``: the answers the
    interval rests on (with a budget's ``more`` it gives what the run holds)."""
    if not budgets:
        return ""
    parts, held = [], None
    for budget in budgets:
        if not budget.reachable:
            parts.append(f"±{format_value(budget.half_width)}: about {budget.needed}"
                         + (" answers" if held is None else ""))
            held = counted + budget.more
        elif budget.more == 0:
            parts.append(f"±{format_value(budget.half_width)}: reached")
        else:
            parts.append(f"±{format_value(budget.half_width)}: {budget.more} more answer"
                         + ("" if budget.more == 1 else "s"))
    text = " · ".join(parts)
    return text if held is None else f"{text} ({MORE_THAN_THE_RUN_HOLDS}: {held})"


def figure_interval(key: str, units: Units, *, confidence: float = DEFAULT_CONFIDENCE,
                    half_widths: Sequence[float] = BUDGET_HALF_WIDTHS) -> FigureInterval:
    """One pooled ratio's interval (``wilson-clustered``) with its label budget, capped
    by ``units.available`` (else by the answers counted)."""
    interval = units.interval(confidence=confidence)
    available = units.available if units.available is not None else interval.n_answers
    return FigureInterval(key, interval, answers_needed(interval, available=available, half_widths=half_widths))


def run_intervals(figures: RunFigures, *, confidence: float = DEFAULT_CONFIDENCE,
                  half_widths: Sequence[float] = BUDGET_HALF_WIDTHS, means: bool = True) -> dict[str, FigureInterval]:
    """Every figure of ``figures`` with its interval at ``confidence`` and label
    budget (module docstring), pooled figures first in :data:`POOLED_LABELS`
    order (``gap`` after ``support``), then ``mean_<figure>`` (left out with
    ``means=False``: the project summary shows pooled figures only)."""
    check_confidence(confidence)
    out: dict[str, FigureInterval] = {}
    units = figures.units
    for key in POOLED_LABELS:
        if key == "gap":
            interval = gap_interval(units["coverage"], units["support"], confidence=confidence)
            available = units["support"].available
            out[key] = FigureInterval(key, interval, answers_needed(
                interval, available=available if available is not None else interval.n_answers,
                half_widths=half_widths))
        elif key in units:
            out[key] = figure_interval(key, units[key], confidence=confidence, half_widths=half_widths)
    for key, values in figures.values.items() if means else ():
        interval = values.interval(confidence=confidence)
        out[f"mean_{key}"] = FigureInterval(f"mean_{key}", interval, answers_needed(
            interval, available=_available_for_mean(units.get(key), interval), half_widths=half_widths))
    return out


def _available_for_mean(units: Units | None, interval: Interval) -> int:
    if units is not None and units.available is not None:
        return max(units.available, interval.n_answers)
    return interval.n_answers


def gap_interval(coverage: Units, support: Units, *, confidence: float = DEFAULT_CONFIDENCE) -> Interval:
    """``coverage − support`` of one run (SPEC §4.1) with its linearized interval over
    its answers (:func:`scoring.intervals.contrast_interval`); ``n_units`` = claims."""
    questions = coverage.question_ids
    cited, claims = coverage.aligned_arrays(questions)
    supported, labeled = support.aligned_arrays(questions)
    return contrast_interval([(1, cited, claims), (-1, supported, labeled)], confidence=confidence,
                             n_units=int(claims.sum()))


def paired_differences(a: RunFigures, b: RunFigures, *, questions: Sequence[str] | None = None,
                       keys: Sequence[str] | None = None,
                       confidence: float = DEFAULT_CONFIDENCE) -> dict[str, PairedDifference]:
    """B − A of every figure both runs define, paired by question (SPEC §4.5).

    ``questions``: the questions both runs answered (default: the questions both
    list, in sorted order); answers outside them are left out. ``keys``: the
    figures wanted, by name (``gap`` and ``mean_<figure>`` included); default:
    the pooled ratios, ``gap``, then the means, as :func:`run_intervals` orders them.
    """
    check_confidence(confidence)
    if questions is None:
        questions = sorted(_questions(a) & _questions(b))
    questions = tuple(str(q) for q in questions)  # a tuple: a run's own question_ids compare equal at once
    if keys is None:
        keys = [k for k in POOLED_LABELS if k == "gap" or (k in a.units and k in b.units)]
        keys += [f"mean_{k}" for k in a.values if k in b.values]
    out = {}
    for key in keys:
        terms = [_terms(side, key, questions) for side in (a, b)]
        if terms[0] is None or terms[1] is None:
            continue
        out[key] = paired_contrast(terms[0], terms[1], confidence=confidence)
    return out


def _questions(figures: RunFigures) -> set[str]:
    return set(figures.units["coverage"].question_ids)


def _terms(figures: RunFigures, key: str, questions: Sequence[str]) -> list[tuple[int, Any, Any]] | None:
    if key == "gap":
        cited, claims = figures.units["coverage"].aligned_arrays(questions)
        supported, labeled = figures.units["support"].aligned_arrays(questions)
        return [(1, cited, claims), (-1, supported, labeled)]
    if key.startswith("mean_") and key[5:] in figures.values:
        return [(1, *figures.values[key[5:]].unit_arrays(questions))]
    if key in figures.units:
        return [(1, *figures.units[key].aligned_arrays(questions))]
    return None


def interval_text(interval: Interval | PairedDifference | None) -> str:
    """The interval of a figure as printed beside it: ``"(0.64–0.85)"`` for a ratio,
    ``"(−0.20 to +0.06)"`` for a difference (signed, so a bound's sign never hides in
    a dash); ``""`` when the figure is undefined, ``"(no interval)"`` when it has no
    interval (fewer than two answers for a mean or a difference)."""
    if interval is None:
        return ""
    estimate = interval.delta if isinstance(interval, PairedDifference) else interval.estimate
    if estimate is None:
        return ""
    if not interval.defined:
        return "(no interval)"
    if isinstance(interval, PairedDifference) or interval.low < 0:
        return f"({format_delta(interval.low)} to {format_delta(interval.high)})"
    return f"({format_value(interval.low)}–{format_value(interval.high)})"


def interval_title(interval: Interval | PairedDifference | None) -> str:
    """What an interval rests on, in words (a page's tooltip, a table's note):
    ``"95% interval, answers as clusters: 29 answers, 175 units weigh like 64"``."""
    if interval is None:
        return ""
    if not interval.defined:
        estimate = interval.delta if isinstance(interval, PairedDifference) else interval.estimate
        if estimate is None:
            return ""
        unit = "questions" if isinstance(interval, PairedDifference) else "answers"
        return f"no interval: it takes at least two {unit} with a unit"
    level = f"{format_value(interval.level * 100, 0)}% interval"
    if isinstance(interval, PairedDifference):
        return f"{level} of B − A, paired by question: {_count(interval.n_questions, 'question')}"
    answers = _count(interval.n_answers, "answer")
    if interval.method == "student-t":
        return f"{level}, Student t over {answers}"
    if interval.n_eff is None:
        return f"{level}, answers as clusters: {answers}"
    return (f"{level}, answers as clusters: {answers}, {_count(interval.n_units, 'unit')} "
            f"weigh like {format_value(interval.n_eff, 0)} independent ones")


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def intervals_dict(intervals: Mapping[str, FigureInterval]) -> dict[str, dict[str, Any]]:
    """JSON form of :func:`run_intervals` (``score --format json``'s ``intervals``)."""
    return {key: entry.as_dict() for key, entry in intervals.items()}
