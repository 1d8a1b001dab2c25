"""Every run of a project side by side, with the unweighted mean of the runs (SPEC §4.3b).

Papers report one row per system and their average (Liu, Zhang & Liang 2023
report citation recall and precision per generative search engine and "on
average 51.5% and 74.5%"); this is that table for a project's runs. The mean
row is the unweighted mean of the runs' pooled values: each run counts once,
whatever its size, and a run whose value is undefined (``None``) is left out
of that column's mean (the row says over how many runs each mean is taken).

This module never imports Django.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from scoring.figures import FigureInterval
from scoring.ratio import Ratio

# The ratio columns of a summary row, in display order.
RATIO_COLUMNS = ("coverage", "support", "supported_rate", "citation_precision")


@dataclass(frozen=True)
class RunSummary:
    """One run's pooled figures (SPEC §4.1, §4.3b).

    ``answers``, ``claims`` (factual claims of non-abstaining answers) and
    ``pending`` are counts; ``coverage``, ``support``, ``supported_rate`` and
    ``citation_precision`` (from per-citation judgments under ``rule``; 0/0
    when nothing is judged) are exact :class:`Ratio`; ``gap`` = coverage −
    support (``None`` if either is undefined). ``intervals``: each of those
    figures (ratio columns and ``gap``) with its interval (SPEC §4.5), by name.
    """

    run: str
    answers: int
    claims: int
    pending: int
    coverage: Ratio
    support: Ratio
    supported_rate: Ratio
    citation_precision: Ratio
    gap: float | None
    intervals: dict[str, FigureInterval] = field(default_factory=dict, compare=False)

    def interval(self, name: str) -> FigureInterval | None:
        """The interval of figure ``name`` (a ratio column or ``gap``), ``None`` when not computed."""
        return self.intervals.get(name)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: counts, each ratio's value (``None`` when undefined) and its
        exact fraction as ``"n/d"`` under ``<name>_fraction``, the gap, and
        ``intervals`` ({figure: ``FigureInterval.as_dict()``}) when computed."""
        row: dict[str, Any] = {"run": self.run, "answers": self.answers, "claims": self.claims,
                               "pending": self.pending}
        for name in RATIO_COLUMNS:
            ratio: Ratio = getattr(self, name)
            row[name] = ratio.value
            row[f"{name}_fraction"] = f"{ratio.numerator}/{ratio.denominator}"
        row["gap"] = self.gap
        if self.intervals:
            row["intervals"] = {name: entry.as_dict() for name, entry in self.intervals.items()}
        return row


def _mean(values: list[float | None]) -> tuple[float | None, int]:
    defined = [value for value in values if value is not None]
    return (math.fsum(defined) / len(defined) if defined else None), len(defined)


def mean_row(runs: list[RunSummary]) -> dict[str, Any]:
    """The unweighted mean of ``runs`` (module docstring), as a JSON-ready row.

    Keys: ``run`` (``"mean of N runs"``), ``answers`` and ``claims`` (mean
    counts, floats), each ratio column's mean (``None`` when no run defines
    it) with ``<name>_runs`` (how many runs it averages), and ``gap`` (mean of
    the defined gaps). Empty ``runs`` give ``None`` everywhere and 0 runs.
    """
    row: dict[str, Any] = {"run": f"mean of {len(runs)} run{'' if len(runs) == 1 else 's'}"}
    row["answers"], _ = _mean([float(r.answers) for r in runs])
    row["claims"], _ = _mean([float(r.claims) for r in runs])
    for name in RATIO_COLUMNS:
        row[name], row[f"{name}_runs"] = _mean([getattr(r, name).value for r in runs])
    row["gap"], row["gap_runs"] = _mean([r.gap for r in runs])
    return row


def summary_table(runs: list[RunSummary]) -> list[dict[str, Any]]:
    """One JSON-ready row per run (``RunSummary.to_dict``, in the given order), then
    :func:`mean_row` last."""
    return [run.to_dict() for run in runs] + [mean_row(runs)]
