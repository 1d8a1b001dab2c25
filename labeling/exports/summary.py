"""The project summary (every run side by side, SPEC §4.3b) as an xlsx workbook."""

from __future__ import annotations

import io

from labeling.exports.cells import text_cell
from labeling.models import Project
from scoring.intervals import DEFAULT_CONFIDENCE
from scoring.ratio import format_value
from scoring.summary import RATIO_COLUMNS, RunSummary, mean_row

HEADER = ["run", "answers", "claims", "pending", "coverage", "coverage (fraction)", "support",
          "support (fraction)", "supported rate", "supported rate (fraction)", "citation precision",
          "citation precision (fraction)", "gap"]
# After the columns above (which keep their places): each figure's interval (SPEC §4.5).
INTERVAL_FIGURES = (*RATIO_COLUMNS, "gap")
INTERVAL_HEADER = [f"{name.replace('_', ' ')} {bound}" for name in INTERVAL_FIGURES for bound in ("ci_low", "ci_high")]


def summary_xlsx(*, project: Project, runs: list[RunSummary], rule: str) -> bytes:
    """Sheet ``Runs``: one row per run (counts, each ratio as a number and its fraction
    ``"n/d"`` as text, the gap, then each figure's interval as ``<figure> ci_low`` /
    ``ci_high`` columns; undefined values are empty cells), the unweighted mean of the
    runs last; then the project, the citation precision rule and what the mean is.
    Run names go through ``text_cell`` (formulas written as text, SPEC §7)."""
    # openpyxl (1 s to import) loads only when a workbook is written
    from openpyxl import Workbook
    from openpyxl.cell import WriteOnlyCell
    from openpyxl.styles import Font

    workbook = Workbook(write_only=True)
    sheet = workbook.create_sheet("Runs")
    sheet.freeze_panes = "A2"
    bold = Font(bold=True)
    header = []
    for name in HEADER + INTERVAL_HEADER:
        cell = WriteOnlyCell(sheet, value=name)
        cell.font = bold
        header.append(cell)
    sheet.append(header)
    for run in runs:
        row = [text_cell(sheet, run.run), run.answers, run.claims, run.pending]
        for name in RATIO_COLUMNS:
            ratio = getattr(run, name)
            row += [ratio.value, f"{ratio.numerator}/{ratio.denominator}"]
        bounds = []
        for name in INTERVAL_FIGURES:
            entry = run.interval(name)
            bounds += [entry.interval.low, entry.interval.high] if entry is not None else [None, None]
        sheet.append([*row, run.gap, *bounds])
    mean = mean_row(runs)
    mean_cells = [WriteOnlyCell(sheet, value=mean["run"]), mean["answers"], mean["claims"], None]
    mean_cells[0].font = bold
    for name in RATIO_COLUMNS:
        mean_cells += [mean[name], None]
    sheet.append([*mean_cells, mean["gap"]])
    sheet.append([])
    sheet.append(["project", text_cell(sheet, project.slug)])
    sheet.append(["citation precision rule", rule])
    sheet.append(["mean", "unweighted mean of the runs' pooled values; undefined values left out"])
    sheet.append(["ci_low, ci_high", f"{format_value(_level(runs) * 100, 0)}% interval of each figure, answers as "
                  "clusters (SPEC §4.5: Wilson at the effective size; the gap's is linearized)"])
    buffer = io.BytesIO()
    workbook.save(buffer)
    return buffer.getvalue()


def _level(runs: list[RunSummary]) -> float:
    for run in runs:
        for entry in run.intervals.values():
            return entry.interval.level
    return DEFAULT_CONFIDENCE
