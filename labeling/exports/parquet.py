"""Label table → Apache Parquet (SPEC §6), typed for analytics.

The columns of ``labeling.exports.label_table`` (``LABEL_TABLE_COLUMNS``)
plus ``reviewer_labels``, with Arrow types instead of text: ids and indexes
``int64``, ``factual`` ``bool``, ``label`` a nullable string, ``labeled_at``
a UTC timestamp (milliseconds, whole seconds as label tables record them; null when no label), ``reviewer_labels`` a
list of ``{reviewer, label, justification, labeled_at}`` structs (every
current label on the claim, one per reviewer: several annotators are kept,
not only the agreed label). The other columns are strings as in the CSV.

``pyarrow`` is an optional extra (``pip install -e '.[parquet]'``): without
it, :func:`parquet_available` is False and writing raises ImportError naming
the extra.
"""

from __future__ import annotations

import importlib.util
from datetime import UTC, datetime
from typing import IO, Any

from labeling.exports.label_table import INT_COLUMNS, LABEL_TABLE_COLUMNS, REVIEWER_LABELS
from scoring.claims import to_native
from scoring.lazy import pd  # loaded on first use: keeps start-up fast (SPEC §7)

PARQUET_EXTRA = "pip install -e '.[parquet]'"
_BOOL_COLUMNS = ("factual", "in_sample")
_TIME_COLUMNS = ("labeled_at", "adjudicated_at")


def parquet_available() -> bool:
    """``pyarrow`` is installed (the ``parquet`` extra)."""
    return importlib.util.find_spec("pyarrow") is not None


def _pyarrow() -> Any:
    if not parquet_available():
        raise ImportError(f"writing Parquet needs pyarrow: {PARQUET_EXTRA}")
    import pyarrow

    return pyarrow


def schema() -> Any:
    """The Arrow schema of an exported label table (module docstring)."""
    pa = _pyarrow()
    # Parquet has no seconds unit: milliseconds, the values whole seconds as label tables record them.
    time = pa.timestamp("ms", tz="UTC")
    fields = []
    for column in LABEL_TABLE_COLUMNS:
        if column in INT_COLUMNS:
            fields.append(pa.field(column, pa.int64(), nullable=False))
        elif column in _BOOL_COLUMNS:
            fields.append(pa.field(column, pa.bool_()))
        elif column in _TIME_COLUMNS:
            fields.append(pa.field(column, time))
        else:
            fields.append(pa.field(column, pa.string(), nullable=column == "label"))
    fields.append(pa.field(REVIEWER_LABELS, pa.list_(pa.struct([
        ("reviewer", pa.string()), ("label", pa.string()), ("justification", pa.string()), ("labeled_at", time)]))))
    return pa.schema(fields)


def arrow_table(table: pd.DataFrame) -> Any:
    """The label table frame as a ``pyarrow.Table`` of :func:`schema`. A
    version written before ``reviewer_labels`` (or the judgment columns)
    existed gives nulls there."""
    pa = _pyarrow()
    columns: dict[str, list[Any]] = {}
    for column in LABEL_TABLE_COLUMNS:
        values = [to_native(v) for v in table[column].tolist()] if column in table else [None] * len(table)
        if column in _TIME_COLUMNS:
            values = [_time(v) for v in values]
        elif column in _BOOL_COLUMNS:
            values = [None if v is None else bool(v) for v in values]
        elif column not in INT_COLUMNS and column != "label":
            values = ["" if v is None else str(v) for v in values]
        columns[column] = values
    raw = table[REVIEWER_LABELS].tolist() if REVIEWER_LABELS in table else [None] * len(table)
    columns[REVIEWER_LABELS] = [
        None if items is None else [{"reviewer": item.get("reviewer"), "label": item.get("label"),
                                     "justification": item.get("justification") or "",
                                     "labeled_at": _time(item.get("labeled_at"))} for item in items]
        for items in raw]
    return pa.Table.from_pydict(columns, schema=schema())


def write_parquet(table: pd.DataFrame, out: IO[bytes]) -> None:
    """Write the label table (module docstring) as one Parquet file to a binary file."""
    _pyarrow()
    import pyarrow.parquet as pq

    pq.write_table(arrow_table(table), out)


def _time(value: Any) -> datetime | None:
    """``"2025-01-31T09:15:00Z"`` (as label tables hold times) → aware UTC datetime."""
    if value is None or value is pd.NaT:
        return None
    if isinstance(value, datetime):
        return value.astimezone(UTC)
    return datetime.fromisoformat(str(value).replace("Z", "+00:00")).astimezone(UTC)
