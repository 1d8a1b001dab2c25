"""Reading a run at one moment while others write to it, and locking claims
in one order (SPEC §7).

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

from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from django.db import DEFAULT_DB_ALIAS, connections, transaction
from django.db.models import Model

# Ids per locking statement (SQLite's limit on query parameters is far above).
_BATCH = 500


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


def lock_claims(claim_ids: set[int] | list[int]) -> None:
    """Row locks on ``claim_ids`` and on their answers, in the order every
    writer of claims takes them: an answer before its claims (splits and
    merges lock the answer, ``labeling.review.claim_edits``), ids ascending. Writers
    that change several claims at once (a label table import, a judge's
    verdicts) call it first, so no two writers wait for each other in a
    circle (a PostgreSQL deadlock, a 500). Call it inside a transaction; on
    SQLite it locks nothing (the transaction holds the whole database)."""
    from labeling.models import Answer, Claim

    ids = sorted(claim_ids)
    answer_ids: set[int] = set()
    for start in range(0, len(ids), _BATCH):
        answer_ids.update(Claim.objects.filter(pk__in=ids[start:start + _BATCH]).values_list("answer_id", flat=True))
    answers = sorted(answer_ids)
    for start in range(0, len(answers), _BATCH):
        list(Answer.objects.select_for_update(no_key=True).filter(pk__in=answers[start:start + _BATCH])
             .order_by("pk").values_list("pk", flat=True))
    for start in range(0, len(ids), _BATCH):
        list(Claim.objects.select_for_update().filter(pk__in=ids[start:start + _BATCH]).order_by("pk")
             .values_list("pk", flat=True))


# First key of the PostgreSQL advisory locks of label table snapshots ("CL" for Citelab).
_SNAPSHOT_LOCK_SPACE = 0x434C


def snapshot_lock(run_id: int) -> None:
    """Take the lock that lets one snapshot of run ``run_id`` be saved at a
    time, until the transaction ends. On PostgreSQL a transaction advisory
    lock, not the run's row: inside :func:`consistent_read` (REPEATABLE READ)
    locking a row that a split or merge updated meanwhile (``claims_changed``
    writes the run row) fails with a serialization error, while an advisory
    lock waits and succeeds. On SQLite a no-op (BEGIN IMMEDIATE already holds
    the database)."""
    connection = connections[DEFAULT_DB_ALIAS]
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            # Two int4 keys; ids past 2**31 share a lock with another run's (harmless: both wait their turn).
            cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [_SNAPSHOT_LOCK_SPACE, run_id % 2**31])


# Rows a bulk write adds before its tables are analyzed at once (below: autovacuum's own
# threshold, 50 rows + 10% of the table, is not reached by a first import's tables).
ANALYZE_AFTER_ROWS = 1_000


def analyze_after_bulk_write(models: Iterable[type[Model]], *, rows: int) -> bool:
    """Refresh PostgreSQL's planner statistics of ``models``' tables after a
    bulk write of ``rows`` rows (an import, a judge's verdicts); returns
    whether it ran.

    Without statistics the planner guesses: on a 50k-claim run imported a
    moment ago the queue's "next claim in this answer" became a hash of
    every citation of the run (43 ms of a 72 ms label step, SPEC §7) where an
    index walk takes 0.9 ms. Autovacuum would analyze the tables in time (if
    it is on); PostgreSQL's manual advises ANALYZE after a bulk load, and
    it reads a bounded sample (300 × the statistics target rows a table), so
    it costs the same at 50k or 1M claims. Inside a transaction the
    statistics are visible once it commits. SQLite: nothing (its planner
    needs no statistics for these queries; ``ANALYZE`` there reads every
    row). Below :data:`ANALYZE_AFTER_ROWS` rows nothing runs either.
    """
    connection = connections[DEFAULT_DB_ALIAS]
    if connection.vendor != "postgresql" or rows < ANALYZE_AFTER_ROWS:
        return False
    tables = ", ".join(connection.ops.quote_name(model._meta.db_table) for model in models)
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {tables}")
    return True


# Ids one statement names where the database caps a statement's parameters (SQLite, as Django
# declares it: 999).
IDS_PER_STATEMENT = 900


def id_chunks(ids: Iterable[int]) -> Iterator[list[int]]:
    """``ids`` in lists of :data:`IDS_PER_STATEMENT` where the database caps a
    statement's parameters (SQLite), in one list where it does not (PostgreSQL: a
    statement each costs a scan); nothing for no ids."""
    wanted = list(ids)
    size = IDS_PER_STATEMENT if connections[DEFAULT_DB_ALIAS].features.max_query_params else max(len(wanted), 1)
    for start in range(0, len(wanted), size):
        yield wanted[start:start + size]
