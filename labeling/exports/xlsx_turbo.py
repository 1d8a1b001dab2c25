"""The label table workbook written with xlsxturbo (rust_xlsxwriter under a
DataFrame API): the default writer of ``labeling.exports.xlsx``, ~10× less
CPU than openpyxl on a 50k-claim table.

Each sheet goes in as one DataFrame with per-column formats (header, widths,
wrapped text, the 0.00 number format); the cells that need a look of their
own (text kept from being read as a formula: Excel's quote prefix; a
Summary fraction) are written once more over the frame through xlsxturbo's
``cells``. Text is cleaned by :func:`labeling.exports.cells.spreadsheet_text`
first, as the openpyxl writer does; xlsxturbo writes every ``str`` as a
string cell (never a formula, never a number or date read from it).
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import Any

from labeling.exports.cells import FORMULA_PREFIXES, spreadsheet_text, spreadsheet_texts
from labeling.exports.xlsx_layout import (
    ANSWER_COLUMNS,
    ANSWER_FRACTIONS,
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

_TEXT_TYPES = {str, type(None)}
_WRAP = {"wrap_text": True, "align_vertical": "top"}
_HEADER = {"bold": True, "font_color": f"#{HEADER_INK}", "bg_color": f"#{HEADER_FILL}"}


def xlsxturbo_bytes(*, table: pd.DataFrame, metrics: ClaimMetrics, passages: pd.DataFrame,
                    info: WorkbookInfo) -> bytes:
    """The label table workbook (``labeling.exports.xlsx``) as bytes;
    arguments as :func:`labeling.exports.xlsx.write_label_workbook`.

    Raises ImportError when xlsxturbo is not installed and
    ``xlsxturbo.XlsxTurboError`` when it refuses the workbook (the caller
    falls back to openpyxl). Memory: the whole workbook is built in memory
    (~300 MB at 50k claims), not streamed.
    """
    import xlsxturbo

    label_frame = table[LABEL_COLUMNS]
    labels, label_cells = _frame(
        LABEL_COLUMNS, [label_frame[column].tolist() for column in LABEL_COLUMNS], wrapped=WRAPPED,
        plain=LABEL_VALUE_COLUMNS)
    answers, answer_cells = _frame(ANSWER_COLUMNS, _columns(answer_rows(metrics), len(ANSWER_COLUMNS)),
                                   fractions=ANSWER_FRACTIONS)
    summary, summary_cells = _frame(SUMMARY_COLUMNS, _columns(summary_rows(metrics, info, rows=len(table)),
                                                              len(SUMMARY_COLUMNS)))
    passage_frame, passage_cells = _frame(PASSAGE_COLUMNS, [passages[c].tolist() for c in PASSAGE_COLUMNS],
                                          wrapped={"text"})
    label_colours = [
        {"type": "cell", "criteria": "equal_to", "value": f'"{value}"',
         "format": {"font_color": f"#{ink}", "bold": True, "bg_color": f"#{background}"}}
        for value, (ink, background) in LABEL_COLOURS.items()
    ]
    sheets = [
        (labels, "Labels", _options(LABEL_COLUMNS, LABEL_WIDTHS, label_cells, wrapped=WRAPPED) | {
            "validations": {"label": {"type": "list", "values": list(LABEL_CHOICES),
                                      "error_title": LABEL_ERROR_TITLE, "error_message": LABEL_ERROR}},
            "conditional_formats": {"label": label_colours},
        }),
        (answers, "Answers", _options(ANSWER_COLUMNS, ANSWER_WIDTHS, answer_cells, fractions=ANSWER_FRACTIONS)),
        (summary, "Summary", _options(SUMMARY_COLUMNS, SUMMARY_WIDTHS, summary_cells) | {"autofilter": False}),
        (passage_frame, "Passages", _options(PASSAGE_COLUMNS, PASSAGE_WIDTHS, passage_cells, wrapped={"text"})),
    ]
    out = io.BytesIO()
    xlsxturbo.dfs_to_xlsx(sheets, out)
    return out.getvalue()


def _columns(rows: list[list[Any]], width: int) -> list[list[Any]]:
    return [[row[k] for row in rows] for k in range(width)]


def _frame(names: Sequence[str], columns: list[list[Any]], *, wrapped: frozenset[str] | set[str] = frozenset(),
           plain: frozenset[str] = frozenset(), fractions: frozenset[str] = frozenset(),
           ) -> tuple[pd.DataFrame, dict[str, Any]]:
    """A sheet's frame (object columns of cell values) and the cells to write
    over it: text cleaned for a cell, ``""``/NaN as empty cells, formula-like
    text with Excel's quote prefix, a :class:`Fraction` outside a fraction
    column with the 0.00 format. ``plain`` columns go in untouched."""
    cells: dict[str, Any] = {}
    data: dict[str, Any] = {}
    for number, (name, values) in enumerate(zip(names, columns, strict=True)):
        if name in plain:
            data[name] = values
            continue
        letter = _letter(number)
        look = _WRAP if name in wrapped else {}
        if name not in fractions and set(map(type, values)) <= _TEXT_TYPES:
            # A column of text (and empty cells): cleaned in one pass, the same cells as below.
            present = [k for k, value in enumerate(values) if value]
            texts = spreadsheet_texts([values[k] for k in present])
            cleaned = [None] * len(values)
            for k, value in zip(present, texts, strict=True):
                cleaned[k] = value
                if value.startswith(FORMULA_PREFIXES):
                    cells[f"{letter}{k + 2}"] = {"value": value, "quote_prefix": True, **look}
            data[name] = pd.Series(cleaned, dtype=object)
            continue
        cleaned = []
        for row, value in enumerate(values, start=2):
            if isinstance(value, str):
                if not value:
                    value = None
                else:
                    value = spreadsheet_text(value)
                    if value.startswith(FORMULA_PREFIXES):
                        cells[f"{letter}{row}"] = {"value": value, "quote_prefix": True, **look}
            elif isinstance(value, Fraction):
                value = float(value)
                if name not in fractions:
                    cells[f"{letter}{row}"] = {"value": value, "num_format": FRACTION_FORMAT}
            elif value is not None and value != value:  # NaN
                value = None
            cleaned.append(value)
        data[name] = pd.Series(cleaned, dtype="float64" if name in fractions else object)
    return pd.DataFrame(data, columns=list(names)), cells


def _options(names: Sequence[str], widths: dict[str, float], cells: dict[str, Any], *,
             wrapped: frozenset[str] | set[str] = frozenset(), fractions: frozenset[str] = frozenset()) -> dict:
    formats: dict[str, Any] = {name: dict(_WRAP) for name in names if name in wrapped}
    formats |= {name: {"num_format": FRACTION_FORMAT} for name in names if name in fractions}
    return {
        "freeze_panes": True, "autofilter": True, "header_format": _HEADER, "column_formats": formats,
        "column_widths": {k: _excel_width(widths.get(name, DEFAULT_WIDTH)) for k, name in enumerate(names)},
        "cells": cells,
    }


def _excel_width(stored: float) -> float:
    """The width to ask rust_xlsxwriter for so the file stores ``stored``
    (OOXML's width, which openpyxl writes as given): rust_xlsxwriter takes the
    width Excel shows and adds 5 pixels of padding at 7 pixels a character;
    the 0.01-pixel nudge keeps its rounding down from losing 1/256."""
    return (stored * 7 - 5 + 0.01) / 7


def _letter(number: int) -> str:
    """Column letter of the 0-based column ``number`` (0 → A, 26 → AA)."""
    letters = ""
    number += 1
    while number:
        number, rest = divmod(number - 1, 26)
        letters = chr(65 + rest) + letters
    return letters
