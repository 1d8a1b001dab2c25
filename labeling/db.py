"""Reading a run at one moment while others write to it (issue 14, part 4).

A label table is read in several statements (claims, labels, revisions,
citations, passages). Under PostgreSQL's default READ COMMITTED each
statement sees the database as of its own start, so a split or merge
committed between two of them gave a table whose claims and citations
disagree (``KeyError`` in ``labeling.exports.label_table``). Inside
:func:`consistent_read` every statement sees the same moment:

- PostgreSQL: a REPEATABLE READ transaction (one snapshot, taken at its
  first statement; reads never block writers nor wait for them);
- SQLite: one transaction. WAL mode gives a reader the database as of its
  first read until it ends. A read-only block begins DEFERRED, so it takes
  no write lock (the settings make other transactions BEGIN IMMEDIATE); with
  ``for_write=True`` it keeps IMMEDIATE, as a snapshot writes its version.

Nested in an open transaction it does nothing (a savepoint ``for_write``):
that transaction already fixes what it sees (the isolation level of a
transaction cannot change once it has run a statement), and reads need no
savepoint. Costs one statement on PostgreSQL (``SET TRANSACTION``), none on
SQLite.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.db import DEFAULT_DB_ALIAS, connections, transaction


@contextmanager
def consistent_read(*, for_write: bool = False, using: str = DEFAULT_DB_ALIAS) -> Iterator[None]:
    """A transaction in which every read sees the database at one moment
    (module docstring); ``for_write`` when the block also writes."""
    connection = connections[using]
    if connection.in_atomic_block:
        if for_write:  # a savepoint, so a failed write leaves the open transaction usable
            with transaction.atomic(using=using):
                yield
            return
        # Reads need no savepoint: the open transaction already fixes what they see.
        yield
        return
    if connection.vendor == "postgresql":
        with transaction.atomic(using=using):
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            yield
        return
    if connection.vendor == "sqlite" and not for_write:
        # BEGIN DEFERRED: the read snapshot without the write lock every other block takes.
        connection.ensure_connection()  # connecting sets transaction_mode from the settings
        mode = connection.transaction_mode
        connection.transaction_mode = "DEFERRED"
        try:
            with transaction.atomic(using=using):
                connection.transaction_mode = mode
                yield
        finally:
            connection.transaction_mode = mode
        return
    with transaction.atomic(using=using):
        yield
