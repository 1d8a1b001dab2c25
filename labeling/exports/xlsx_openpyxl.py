"""The label table workbook written with openpyxl's write-only mode: the
fallback writer (``labeling.exports.xlsx``), used when xlsxturbo is not
installed or fails. Same sheets, styles, drop-down and text safety as
``labeling.exports.xlsx_turbo`` (``labeling.exports.xlsx_layout``); memory
stays flat in the number of rows (each sheet streams to a temporary file),
at ~5 µs a cell: 9–18 s of CPU for 50k rows.
"""

from __future__ import annotations

from typing import IO, Any

from labeling.exports.cells import text_cell
from labeling.exports.xlsx_layout import (
    ANSWER_COLUMNS,
    ANSWER_WIDTHS,
    DEFAULT_WIDTH,
    FRACTION_FORMAT,
    HEADER_FILL,
    HEADER_INK,
    LABEL_CHOICES,
    LABEL_COLOURS,
    LABEL_COLUMNS,
    LABEL_ERROR,
    LABEL_ERROR_TITLE,
    LABEL_VALUE_COLUMNS,
    LABEL_WIDTHS,
    PASSAGE_COLUMNS,
    PASSAGE_WIDTHS,
    SUMMARY_COLUMNS,
    SUMMARY_WIDTHS,
    WRAPPED,
    Fraction,
    WorkbookInfo,
    answer_rows,
    summary_rows,
)
from scoring.claims import ClaimMetrics
from scoring.lazy import pd  # loaded on first use: keeps start-up fast (SPEC §7)


class _Sheet:
    """Appends rows to a write-only sheet, turning values into safe cells.

    Styled cells share one prebuilt style array per look (wrapped, quoted,
    both, number format) instead of assigning style objects cell by cell:
    openpyxl looks every assignment up in the workbook's style table, which
    dominated the time of a 100k-row export.
    """

    def __init__(self, workbook: Any, title: str, columns: list[str], widths: dict[str, float], *, rows: int):
        from openpyxl.cell import WriteOnlyCell
        from openpyxl.styles import Alignment, Font, PatternFill
        from openpyxl.utils import get_column_letter

        self._cell_class = WriteOnlyCell
        self.ws = workbook.create_sheet(title)
        self.columns = columns
        last = f"{get_column_letter(len(columns))}{rows + 1}"
        # Written as <dimension>: without it openpyxl's read-only mode parses
        # the whole sheet once more just to size it.
        self.ws.calculate_dimension = lambda: f"A1:{last}"
        for number, column in enumerate(columns, start=1):
            self.ws.column_dimensions[get_column_letter(number)].width = widths.get(column, DEFAULT_WIDTH)
        self.ws.freeze_panes = "A2"
        wrap = Alignment(wrap_text=True, vertical="top")
        self._styles = {
            "wrap": self._style(alignment=wrap),
            "quote": self._style(quotePrefix=True),
            "wrap+quote": self._style(alignment=wrap, quotePrefix=True),
            "fraction": self._style(number_format=FRACTION_FORMAT),
        }
        header = []
        for column in columns:
            cell = WriteOnlyCell(self.ws, value=column)
            cell.font = Font(bold=True, color=HEADER_INK)
            cell.fill = PatternFill("solid", fgColor=HEADER_FILL)
            header.append(cell)
        self.ws.append(header)
        self.rows = 0

    def _style(self, **attributes: Any) -> Any:
        template = self._cell_class(self.ws)
        for name, value in attributes.items():
            setattr(template, name, value)
        return template._style

    def cell(self, value: Any, *, wrap: bool = False) -> Any:
        if isinstance(value, Fraction):
            cell = self._cell_class(self.ws, value=float(value))
            cell._style = self._styles["fraction"]  # shared, never mutated afterwards
            return cell
        if isinstance(value, str):
            if wrap:
                return text_cell(self.ws, value, style=self._styles["wrap"],
                                 quoted_style=self._styles["wrap+quote"])
            return text_cell(self.ws, value, quoted_style=self._styles["quote"])
        if value is None or value != value:  # None, NaN
            return None
        return value

    def append(self, row: list[Any]) -> None:
        self.ws.append(row)
        self.rows += 1

    def finish(self, *, autofilter: bool = True) -> None:
        from openpyxl.utils import get_column_letter

        if autofilter:
            last = get_column_letter(len(self.columns))
            self.ws.auto_filter.ref = f"A1:{last}{self.rows + 1}"


def write_openpyxl(
    out: str | IO[bytes], *, table: pd.DataFrame, metrics: ClaimMetrics, passages: pd.DataFrame,
    info: WorkbookInfo,
) -> None:
    """Write the label table workbook (``labeling.exports.xlsx``) to ``out``
    (path or binary file) with openpyxl; arguments as
    :func:`labeling.exports.xlsx.write_label_workbook`."""
    from openpyxl import Workbook  # openpyxl (1 s to import) loads only when a workbook is written

    workbook = Workbook(write_only=True)
    _labels_sheet(workbook, table)
    _rows_sheet(workbook, "Answers", ANSWER_COLUMNS, ANSWER_WIDTHS, answer_rows(metrics))
    _rows_sheet(workbook, "Summary", SUMMARY_COLUMNS, SUMMARY_WIDTHS, summary_rows(metrics, info, rows=len(table)),
                autofilter=False)
    _passages_sheet(workbook, passages)
    workbook.save(out)


def _labels_sheet(workbook: Any, table: pd.DataFrame) -> None:
    from openpyxl.formatting.rule import CellIsRule
    from openpyxl.styles import Font, PatternFill
    from openpyxl.utils import get_column_letter
    from openpyxl.worksheet.datavalidation import DataValidation

    columns = LABEL_COLUMNS
    sheet = _Sheet(workbook, "Labels", columns, LABEL_WIDTHS, rows=len(table))
    data = [table[column].tolist() for column in columns]
    # The int id columns and ``factual`` go in as they are; text goes through cell().
    kinds = [None if column in LABEL_VALUE_COLUMNS else column in WRAPPED for column in columns]
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
        errorTitle=LABEL_ERROR_TITLE, error=LABEL_ERROR,
    )
    validation.add(cells)
    sheet.ws.data_validations.append(validation)
    for value, (ink, background) in LABEL_COLOURS.items():
        sheet.ws.conditional_formatting.add(cells, CellIsRule(
            operator="equal", formula=[f'"{value}"'], font=Font(color=ink, bold=True),
            fill=PatternFill(bgColor=background),
        ))


def _rows_sheet(workbook: Any, title: str, columns: list[str], widths: dict[str, float], rows: list[list[Any]], *,
                autofilter: bool = True) -> None:
    sheet = _Sheet(workbook, title, columns, widths, rows=len(rows))
    for row in rows:
        sheet.append([sheet.cell(value) for value in row])
    sheet.finish(autofilter=autofilter)


def _passages_sheet(workbook: Any, passages: pd.DataFrame) -> None:
    columns = PASSAGE_COLUMNS
    sheet = _Sheet(workbook, "Passages", columns, PASSAGE_WIDTHS, rows=len(passages))
    data = [passages[column].tolist() for column in columns]
    for i in range(len(passages)):
        sheet.append([sheet.cell(data[k][i], wrap=columns[k] == "text") for k in range(len(columns))])
    sheet.finish()
