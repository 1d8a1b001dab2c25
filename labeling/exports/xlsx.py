"""Label table → Excel workbook (SPEC §6), streamed with openpyxl's write-only mode.

Sheets:

- ``Labels``: one row per claim, the columns of
  ``labeling.exports.label_table.LABEL_TABLE_COLUMNS``. Header bold on a
  tinted fill, frozen, with an autofilter; set widths; long text wrapped;
  ``label`` has a SUPPORTED/UNSUPPORTED/UNCITED drop-down and a colour per value.
- ``Answers``: one row per answer: counts (claims, cited, labeled cited,
  supported, unsupported, pending) and coverage/support as fractions in
  [0, 1] (blank when undefined) beside the ratio text ``"3/5 = 0.60"``.
- ``Summary``: pooled and per-answer mean metrics with their 95% intervals
  (columns ``ci_low``, ``ci_high``; SPEC §4.5), the table (current or
  version N), its SHA-256, the reviewer view and the export time.
- ``Passages``: the passages sent with each answer.

Spreadsheet safety (SPEC §7): every text cell goes through
:func:`labeling.exports.cells.text_cell` (control characters, the 32,767
character limit, formulas written as text).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import IO, Any

import pandas as pd
from openpyxl import Workbook
from openpyxl.cell import WriteOnlyCell
from openpyxl.formatting.rule import CellIsRule
from openpyxl.styles import Alignment, Font, PatternFill
from openpyxl.utils import get_column_letter
from openpyxl.worksheet.datavalidation import DataValidation

from labeling.exports.cells import text_cell
from labeling.exports.label_table import INT_COLUMNS, LABEL_TABLE_COLUMNS
from scoring.claims import ClaimMetrics
from scoring.figures import run_figures, run_intervals
from scoring.labels import LABEL_VALUES, SUPPORTED, UNCITED, UNSUPPORTED
from scoring.ratio import Ratio, format_value

LABEL_CHOICES = LABEL_VALUES

# Width in characters per Labels column; the wrapped ones get line breaks.
_LABEL_WIDTHS = {
    "run": 16, "question_id": 22, "answer_id": 10, "claim_index": 8, "claim": 60, "citations": 12,
    "cited_span": 40, "passage": 60, "label": 15, "justification": 45, "reviewer": 14, "labeled_at": 21,
    "status": 13, "claim_id": 10, "claim_revision": 9, "factual": 8, "judgments": 20, "evidence": 40,
}
_WRAPPED = {"claim", "cited_span", "passage", "justification", "judgments", "evidence"}
# Same palette as static/css/app.css (--supported, --unsupported, --uncited).
_LABEL_COLOURS = {
    SUPPORTED: ("1F8A4C", "E3F4EA"),
    UNSUPPORTED: ("B4372F", "FBE7E5"),
    UNCITED: ("6B7280", "EEF0F3"),
}
_HEADER_FONT = Font(bold=True, color="FFFFFF")
_HEADER_FILL = PatternFill("solid", fgColor="2F5BD3")
_WRAP = Alignment(wrap_text=True, vertical="top")


@dataclass(frozen=True)
class WorkbookInfo:
    """What the Summary sheet says about the table: ``version`` number (None
    for the current table), its ``sha256`` (None for the current table),
    ``reviewer`` (None = agreed labels) and the export time."""

    project: str
    run: str
    version: int | None
    sha256: str | None
    reviewer: str | None
    exported_at: datetime
    note: str = ""


class _Sheet:
    """Appends rows to a write-only sheet, turning values into safe cells.

    Styled cells share one prebuilt style array per look (wrapped, quoted,
    both, number format) instead of assigning style objects cell by cell:
    openpyxl looks every assignment up in the workbook's style table, which
    dominated the time of a 100k-row export.
    """

    def __init__(self, workbook: Workbook, title: str, columns: list[str], widths: dict[str, float], *,
                 rows: int):
        self.ws = workbook.create_sheet(title)
        self.columns = columns
        last = f"{get_column_letter(len(columns))}{rows + 1}"
        # Written as <dimension>: without it openpyxl's read-only mode parses
        # the whole sheet once more just to size it.
        self.ws.calculate_dimension = lambda: f"A1:{last}"
        for number, column in enumerate(columns, start=1):
            self.ws.column_dimensions[get_column_letter(number)].width = widths.get(column, 14)
        self.ws.freeze_panes = "A2"
        self._styles = {
            "wrap": self._style(alignment=_WRAP),
            "quote": self._style(quotePrefix=True),
            "wrap+quote": self._style(alignment=_WRAP, quotePrefix=True),
            "fraction": self._style(number_format="0.00"),
        }
        header = []
        for column in columns:
            cell = WriteOnlyCell(self.ws, value=column)
            cell.font = _HEADER_FONT
            cell.fill = _HEADER_FILL
            header.append(cell)
        self.ws.append(header)
        self.rows = 0

    def _style(self, **attributes: Any) -> Any:
        template = WriteOnlyCell(self.ws)
        for name, value in attributes.items():
            setattr(template, name, value)
        return template._style

    def _styled(self, value: Any, style: str) -> WriteOnlyCell:
        cell = WriteOnlyCell(self.ws, value=value)
        cell._style = self._styles[style]  # shared, never mutated afterwards
        return cell

    def cell(self, value: Any, *, wrap: bool = False) -> Any:
        if isinstance(value, str):
            if wrap:
                return text_cell(self.ws, value, style=self._styles["wrap"],
                                 quoted_style=self._styles["wrap+quote"])
            return text_cell(self.ws, value, quoted_style=self._styles["quote"])
        if value is None or value != value:  # None, NaN
            return None
        return value

    def fraction(self, value: float | None) -> Any:
        return None if value is None else self._styled(value, "fraction")

    def append(self, row: list[Any]) -> None:
        self.ws.append(row)
        self.rows += 1

    def finish(self, *, autofilter: bool = True) -> None:
        if autofilter:
            last = get_column_letter(len(self.columns))
            self.ws.auto_filter.ref = f"A1:{last}{self.rows + 1}"


def write_label_workbook(
    out: str | IO[bytes], *, table: pd.DataFrame, metrics: ClaimMetrics, passages: pd.DataFrame,
    info: WorkbookInfo,
) -> None:
    """Write the label table workbook (module docstring) to ``out`` (path or
    binary file).

    ``table``: label table frame (``LABEL_TABLE_COLUMNS``); ``metrics``: its
    :func:`labeling.exports.label_table.table_claim_metrics`; ``passages``:
    :func:`labeling.exports.label_table.passages_frame`. Memory stays flat in
    the number of rows: openpyxl streams each sheet to a temporary file.
    """
    workbook = Workbook(write_only=True)
    _labels_sheet(workbook, table)
    _answers_sheet(workbook, metrics)
    _summary_sheet(workbook, metrics, info, rows=len(table))
    _passages_sheet(workbook, passages)
    workbook.save(out)


def _labels_sheet(workbook: Workbook, table: pd.DataFrame) -> None:
    columns = list(LABEL_TABLE_COLUMNS)
    sheet = _Sheet(workbook, "Labels", columns, _LABEL_WIDTHS, rows=len(table))
    data = [table[column].tolist() for column in columns]
    # The int id columns go in as they are; text goes through cell().
    # ``factual`` is a boolean cell, as the id columns are numbers.
    kinds = [None if column in INT_COLUMNS or column == "factual" else column in _WRAPPED for column in columns]
    cell = sheet.cell
    for row in zip(*data, strict=True):
        sheet.append([value if wrap is None else cell(value, wrap=wrap)
                      for value, wrap in zip(row, kinds, strict=True)])
    sheet.finish()
    label_letter = get_column_letter(columns.index("label") + 1)
    last_row = max(len(table) + 1, 2)
    cells = f"{label_letter}2:{label_letter}{last_row}"
    validation = DataValidation(
        type="list", formula1='"' + ",".join(LABEL_CHOICES) + '"', allow_blank=True, showErrorMessage=True,
        errorTitle="Unknown label", error="Choose SUPPORTED, UNSUPPORTED or UNCITED (or leave blank).",
    )
    validation.add(cells)
    sheet.ws.data_validations.append(validation)
    for value, (ink, background) in _LABEL_COLOURS.items():
        sheet.ws.conditional_formatting.add(cells, CellIsRule(
            operator="equal", formula=[f'"{value}"'], font=Font(color=ink, bold=True),
            fill=PatternFill(bgColor=background),
        ))


_ANSWER_COLUMNS = ["question_id", "answer_id", "claims", "cited", "labeled_cited", "supported", "unsupported",
                   "pending", "coverage", "coverage_ratio", "support", "support_ratio", "abstention"]


def _answers_sheet(workbook: Workbook, metrics: ClaimMetrics) -> None:
    widths = {"question_id": 22, "coverage_ratio": 16, "support_ratio": 16, "labeled_cited": 13}
    sheet = _Sheet(workbook, "Answers", _ANSWER_COLUMNS, widths, rows=len(metrics.per_answer))
    per_answer = metrics.per_answer
    data = {column: per_answer[column].tolist() for column in per_answer.columns}
    for i in range(len(per_answer)):
        coverage = Ratio(int(data["cited"][i]), int(data["claims"][i]))
        support = Ratio(int(data["supported"][i]), int(data["labeled_cited"][i]))
        abstention = bool(data["abstention"][i])
        sheet.append([
            sheet.cell(data["question_id"][i]), sheet.cell(data["answer_id"][i]),
            *(sheet.cell(data[c][i]) for c in ("claims", "cited", "labeled_cited", "supported", "unsupported",
                                                "pending")),
            sheet.fraction(None if abstention else coverage.value),
            "" if abstention else str(coverage),
            sheet.fraction(None if abstention else support.value),
            "" if abstention else str(support),
            abstention,
        ])
    sheet.finish()


class _Fraction(float):
    """A Summary value written with the 0.00 number format."""


def _summary_sheet(workbook: Workbook, metrics: ClaimMetrics, info: WorkbookInfo, *, rows: int) -> None:
    table = f"version {info.version}" if info.version is not None else "current label table (not a version)"

    def fraction(value: float | None) -> _Fraction | None:
        return None if value is None else _Fraction(value)

    def mean(value: float | None, skipped: int) -> list[Any]:
        return [fraction(value), format_value(value),
                f"mean of per-answer values; {skipped} answer(s) skipped (undefined)"]

    intervals = run_intervals(run_figures(claims=metrics))

    def bounds(key: str) -> list[Any]:
        interval = intervals[key].interval
        return [fraction(interval.low), fraction(interval.high)] if interval.defined else [None, None]

    lines: list[list[Any]] = [
        ["project", info.project, "", ""],
        ["run", info.run, "", ""],
        ["table", table, "", ""],
        ["version", info.version, "", ""],
        ["sha256", info.sha256 or "—", "", "SHA-256 of the version's canonical JSON Lines file"],
        ["version note", info.note, "", ""],
        ["labels shown", info.reviewer or "agreed labels (the label that counts for scoring)", "", ""],
        ["exported at (UTC)", info.exported_at.strftime("%Y-%m-%d %H:%M:%S"), "", ""],
        ["claims in table", rows, "", "abstentions excluded from the counts below"],
        ["claims (scored)", metrics.claims, "", ""],
        ["cited claims", metrics.cited, "", ""],
        ["labeled cited claims", metrics.labeled_cited, "", ""],
        [SUPPORTED, metrics.supported, "", ""],
        [UNSUPPORTED, metrics.unsupported, "", ""],
        ["pending (cited, no agreed label)", metrics.pending, "", "support is provisional while this is > 0"],
        ["coverage (pooled)", fraction(metrics.coverage.value), str(metrics.coverage), "cited claims / claims",
         *bounds("coverage")],
        ["support (pooled)", fraction(metrics.support.value), str(metrics.support),
         "SUPPORTED / labeled cited claims", *bounds("support")],
        ["gap (pooled)", fraction(metrics.gap), format_value(metrics.gap), "coverage − support", *bounds("gap")],
        ["coverage (per-answer mean)", *mean(metrics.mean_coverage, metrics.coverage_skipped),
         *bounds("mean_coverage")],
        ["support (per-answer mean)", *mean(metrics.mean_support, metrics.support_skipped),
         *bounds("mean_support")],
        ["answers", metrics.answers, "", ""],
        ["abstentions", metrics.abstentions, "", "answers to unanswerable questions citing nothing"],
    ]
    lines.append(["ci_low, ci_high", "95% interval of the figure, answers as clusters (SPEC §4.5): Wilson at the "
                  "effective size for pooled ratios, Student t for per-answer means", "", ""])
    sheet = _Sheet(workbook, "Summary", ["item", "value", "fraction", "note", "ci_low", "ci_high"],
                   {"item": 34, "value": 68, "fraction": 18, "note": 54, "ci_low": 10, "ci_high": 10},
                   rows=len(lines))
    for line in lines:
        sheet.append([sheet.fraction(float(v)) if isinstance(v, _Fraction) else sheet.cell(v) for v in line])
    sheet.finish(autofilter=False)


def _passages_sheet(workbook: Workbook, passages: pd.DataFrame) -> None:
    columns = ["question_id", "answer_id", "passage_id", "source", "text"]
    sheet = _Sheet(workbook, "Passages", columns,
                   {"question_id": 22, "answer_id": 10, "passage_id": 12, "source": 40, "text": 100},
                   rows=len(passages))
    data = [passages[column].tolist() for column in columns]
    for i in range(len(passages)):
        sheet.append([sheet.cell(data[k][i], wrap=columns[k] == "text") for k in range(len(columns))])
    sheet.finish()
