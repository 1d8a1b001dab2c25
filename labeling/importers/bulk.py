"""Bulk inserts of plain rows for importers: the rows go to the database as they
are, without a model instance per row.

``bulk_create`` builds a model instance and compiles every value of every row
through the field machinery: for a 50k-claim answers file that was more than
half of the import's time, several times the database's own work
(``tests/bench/test_bench_import.py`` measures the import against a floor: the
same rows inserted with nothing but ``executemany``/``COPY``). Here a batch is
one ``executemany`` of a prepared INSERT on SQLite, one ``COPY`` on PostgreSQL.

Ids are allocated before the insert, so the caller can point the next table's
rows at them: on PostgreSQL from the table's own sequence (``nextval``, one
query per batch: safe with concurrent writers), on SQLite as the next values
of the ``AUTOINCREMENT`` counter — safe because an insert runs inside
``transaction.atomic``, which on SQLite begins IMMEDIATE and holds the
database's one write lock until the commit. Ids are never reused (the
``AUTOINCREMENT`` high-water mark counts, not just the live rows): label table
versions name claims by id.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from django.db import connection, models
from django.utils import timezone


def _constant_defaults(model: type[models.Model], given: Sequence[str]) -> tuple[list[str], list[Any]]:
    """Columns the caller leaves out and the value each takes on every row (the
    field's default, or now for ``auto_now_add``), prepared for the database."""
    columns, values = [], []
    now = timezone.now()
    for field in model._meta.concrete_fields:
        if field.primary_key or field.attname in given:
            continue
        if getattr(field, "auto_now_add", False) or getattr(field, "auto_now", False):
            value = now
        elif field.has_default():
            value = field.get_default()
        elif field.null:
            value = None
        else:
            raise ValueError(f"{model.__name__}.{field.attname} has no default: give it in every row")
        columns.append(field.column)
        values.append(field.get_db_prep_save(value, connection))
    return columns, values


def allocate_ids(model: type[models.Model], count: int) -> list[int]:
    """``count`` new primary keys of ``model``'s table, never used before.
    Must run inside ``transaction.atomic`` (see the module docstring).
    Raises RuntimeError outside a transaction or on an engine other than
    SQLite and PostgreSQL (the two Citelab runs on)."""
    if count == 0:
        return []
    if not connection.in_atomic_block:
        raise RuntimeError("allocate_ids runs inside transaction.atomic (it relies on its lock on SQLite)")
    table = model._meta.db_table
    pk = model._meta.pk.column
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            return _next_values(cursor, table, pk, count)
        if connection.vendor != "sqlite":
            # settings.DATABASES accepts only these two (SPEC §7): another engine is a setup error.
            raise RuntimeError(f"Citelab runs on SQLite or PostgreSQL; the database is {connection.vendor}.")
        quoted = connection.ops.quote_name(table)
        cursor.execute(
            f"SELECT MAX(COALESCE((SELECT seq FROM sqlite_sequence WHERE name = %s), 0), "
            f"COALESCE((SELECT MAX({connection.ops.quote_name(pk)}) FROM {quoted}), 0))", [table])
        start = cursor.fetchone()[0] + 1
        return list(range(start, start + count))


def _next_values(cursor, table: str, pk: str, count: int) -> list[int]:
    """``count`` values of the sequence behind ``table.pk``, taken by ``nextval``.
    They mostly come out as one run of consecutive values: then only its ends
    cross the wire (fetching 100k values as rows cost 0.75 s of a 10k-answer
    import). Another session taking values at the same moment breaks the run:
    those values are left unused (a sequence may have gaps; no id is ever
    handed out twice) and ``count`` more are taken and fetched one by one."""
    cursor.execute("SELECT pg_get_serial_sequence(%s, %s)", [connection.ops.quote_name(table), pk])
    sequence = cursor.fetchone()[0]
    cursor.execute("SELECT min(value), max(value) FROM (SELECT nextval(%s) AS value FROM generate_series(1, %s)) t",
                   [sequence, count])
    low, high = cursor.fetchone()
    if high - low + 1 == count:
        return list(range(low, high + 1))
    cursor.execute("SELECT nextval(%s) FROM generate_series(1, %s)", [sequence, count])
    return [row[0] for row in cursor.fetchall()]


def insert_rows(model: type[models.Model], fields: Sequence[str], rows: Iterable[Sequence[Any]], *,
                ids: Sequence[int] | None = None) -> int:
    """Insert ``rows`` into ``model``'s table; returns how many.

    ``fields``: the attnames each row gives, in order (``"answer_id"``, not
    ``"answer"``); every other column takes its field's default on every row
    (``auto_now_add``: now). Row values go to the database as they are: ints,
    strings, booleans and ``None`` only (nothing is converted per row).
    ``ids``: the primary key of each row (from :func:`allocate_ids`), else the
    database assigns them. Raises ValueError when a left-out column has no
    default; a constraint the rows break raises the database's IntegrityError.
    """
    rows = list(rows)
    if not rows:
        return 0
    meta = model._meta
    columns = [meta.get_field(name).column for name in fields]
    extra_columns, extra_values = _constant_defaults(model, fields)
    extra = tuple(extra_values)
    if ids is not None:
        if len(ids) != len(rows):
            raise ValueError(f"{len(ids)} ids for {len(rows)} rows")
        columns = [meta.pk.column, *columns]
        rows = [(pk, *row, *extra) for pk, row in zip(ids, rows, strict=True)]
    else:
        rows = [(*row, *extra) for row in rows]
    columns += extra_columns
    quote = connection.ops.quote_name
    table, names = quote(meta.db_table), ", ".join(quote(c) for c in columns)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            with cursor.cursor.copy(f"COPY {table} ({names}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
        else:
            marks = ", ".join(["%s"] * len(columns))
            cursor.executemany(f"INSERT INTO {table} ({names}) VALUES ({marks})", rows)
    return len(rows)
