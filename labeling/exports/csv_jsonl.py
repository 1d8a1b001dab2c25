"""Label table → CSV and JSON Lines (SPEC §6).

CSV: UTF-8 with a byte-order mark (so Excel reads the accents right), comma
separated, CRLF line ends, one header row with ``LABEL_TABLE_COLUMNS``;
``None`` is written as an empty cell.

The apostrophe rule (spreadsheet safety, SPEC §7): a CSV cell whose text
starts with ``=``, ``+``, ``-``, ``@``, a tab, a carriage return — or with an
apostrophe itself — is written with one extra leading apostrophe (``'=1+1``),
so a spreadsheet opening the file shows text, never runs a formula. The label
table importer removes exactly one leading apostrophe from every cell that
starts with one, which makes the rule lossless (``'x`` → ``''x`` → ``'x``).

JSON Lines: one object per row with the same keys, UTF-8, no escaping needed.
"""

from __future__ import annotations

import csv
import io
import json
from typing import IO, Any

from labeling.exports.label_table import LABEL_TABLE_COLUMNS
from scoring.claims import to_native
from scoring.lazy import pd  # loaded on first use: keeps start-up fast (SPEC §7)

CSV_PREFIXED = ("=", "+", "-", "@", "\t", "\r", "'")


def csv_cell(value: Any) -> Any:
    """A value as the CSV writer should see it (apostrophe rule above)."""
    value = to_native(value)
    if value is None:
        return ""
    if isinstance(value, str) and value.startswith(CSV_PREFIXED):
        return "'" + value
    return value


def write_csv(table: pd.DataFrame, out: IO[bytes]) -> None:
    """Write the label table as CSV (module docstring) to a binary file."""
    text = io.TextIOWrapper(out, encoding="utf-8-sig", newline="", write_through=True)
    try:
        writer = csv.writer(text, lineterminator="\r\n")
        columns = list(LABEL_TABLE_COLUMNS)
        writer.writerow(columns)
        data = [table[column].tolist() for column in columns]
        for i in range(len(table)):
            writer.writerow([csv_cell(values[i]) for values in data])
        text.flush()
    finally:
        text.detach()


def write_jsonl(table: pd.DataFrame, out: IO[bytes]) -> None:
    """Write the label table as JSON Lines (module docstring) to a binary file."""
    columns = list(LABEL_TABLE_COLUMNS)
    data = [table[column].tolist() for column in columns]
    for i in range(len(table)):
        row = {column: to_native(data[k][i]) for k, column in enumerate(columns)}
        out.write(json.dumps(row, ensure_ascii=False).encode("utf-8"))
        out.write(b"\n")
