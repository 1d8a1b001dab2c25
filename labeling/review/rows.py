"""Model instances from rows of hand-written SQL (the label step's reads, SPEC §7).

The label step reads a few small sets of rows on every save; building their
querysets took the ORM longer than the database took to run them. Its hand-written
statements select a model's columns with :func:`columns` and turn them back into
instances with :func:`instance`, through the same converters the ORM applies
(SQLite's booleans and datetimes), so an instance is the one the ORM would give.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from django.db import connection
from django.db.models import Field, Model

Converter = Callable[[Any, Any, Any], Any]


class Columns:
    """The concrete columns of ``model`` under table alias ``alias``, in field order:
    ``select`` (``alias.column, …``), ``nulls`` (one typed NULL each, for the branches
    of a ``UNION ALL`` that carry other rows: PostgreSQL types a bare NULL as text)
    and ``width`` (how many)."""

    def __init__(self, model: type[Model], alias: str):
        self.model = model
        self.fields: list[Field] = list(model._meta.concrete_fields)
        quote = connection.ops.quote_name
        self.select = ", ".join(f"{alias}.{quote(field.column)}" for field in self.fields)
        self.nulls = ", ".join(f"CAST(NULL AS {_cast_type(field)})" for field in self.fields)
        self.width = len(self.fields)
        self.attnames = [field.attname for field in self.fields]
        self.converters: list[tuple[int, list[tuple[Converter, Any]]]] = []
        for position, field in enumerate(self.fields):
            column = field.get_col(model._meta.db_table)
            found = connection.ops.get_db_converters(column) + field.get_db_converters(connection)
            if found:
                self.converters.append((position, [(converter, column) for converter in found]))


def _cast_type(field: Field) -> str:
    return field.cast_db_type(connection) or "text"


_COLUMNS: dict[tuple[str, str, str], Columns] = {}


def columns(model: type[Model], alias: str) -> Columns:
    """:class:`Columns` of ``model`` under ``alias``, made once per database vendor."""
    key = (connection.vendor, model._meta.label, alias)
    found = _COLUMNS.get(key)
    if found is None:
        found = _COLUMNS[key] = Columns(model, alias)
    return found


def instance(cols: Columns, row: Sequence[Any], start: int) -> Any:
    """The instance of ``cols.model`` from ``row[start:start + cols.width]``, converted
    as the ORM converts; ``None`` when its primary key (first column) is NULL (the
    missing side of an outer join). No query."""
    values = list(row[start:start + cols.width])
    if values[0] is None:
        return None
    for position, converters in cols.converters:
        value = values[position]
        for converter, expression in converters:
            value = converter(value, expression, connection)
        values[position] = value
    return cols.model.from_db(connection.alias, cols.attnames, values)
