"""Label table → Excel workbook (SPEC §6).

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

Spreadsheet safety (SPEC §7): every text cell is cleaned by
:func:`labeling.exports.cells.spreadsheet_text` (control characters, the
32,767 character limit) and is a string cell, never a formula; text starting
with ``=``, ``+``, ``-``, ``@``, a tab or a CR also carries Excel's quote prefix.

Two writers make the same workbook (``labeling.exports.xlsx_layout``):
xlsxturbo (``labeling.exports.xlsx_turbo``, ~1 s of CPU for 50k claims,
built in memory) and, when xlsxturbo is not installed or refuses the
workbook, openpyxl's write-only mode (``labeling.exports.xlsx_openpyxl``,
~10× the CPU, memory flat in the rows). README "Speed and load" says why.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import IO

from labeling.exports.xlsx_layout import LABEL_CHOICES, WorkbookInfo
from labeling.exports.xlsx_openpyxl import write_openpyxl
from labeling.exports.xlsx_turbo import xlsxturbo_bytes
from scoring.claims import ClaimMetrics
from scoring.lazy import pd  # loaded on first use: keeps start-up fast (SPEC §7)

__all__ = ["LABEL_CHOICES", "WorkbookInfo", "write_label_workbook"]

logger = logging.getLogger(__name__)


def write_label_workbook(
    out: str | Path | IO[bytes], *, table: pd.DataFrame, metrics: ClaimMetrics, passages: pd.DataFrame,
    info: WorkbookInfo,
) -> None:
    """Write the label table workbook (module docstring) to ``out`` (path or
    binary file).

    ``table``: label table frame (``LABEL_TABLE_COLUMNS``); ``metrics``: its
    :func:`labeling.exports.label_table.table_claim_metrics`; ``passages``:
    :func:`labeling.exports.label_table.passages_frame`. xlsxturbo builds the
    file in memory and nothing reaches ``out`` unless it succeeded, so the
    openpyxl fallback starts from an untouched ``out``.
    """
    try:
        import xlsxturbo  # 0.4 s to import: loaded only when a workbook is written
    except ImportError:
        logger.info("xlsxturbo is not installed: writing the workbook with openpyxl")
    else:
        try:
            data = xlsxturbo_bytes(table=table, metrics=metrics, passages=passages, info=info)
        except xlsxturbo.XlsxTurboError as exc:
            logger.warning("xlsxturbo refused the workbook (%s): writing it with openpyxl", exc)
        else:
            if isinstance(out, str | Path):
                Path(out).write_bytes(data)
            else:
                out.write(data)
            return
    write_openpyxl(out, table=table, metrics=metrics, passages=passages, info=info)
