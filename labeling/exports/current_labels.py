"""The current labels of a run as the figures read them, kept up to date
label by label (SPEC §7).

Every figure of a run starts from its current labels (80k rows on a 50k-claim
run with a reviewer and a judge): read whole, about 100 ms of every figure
recomputed after a label. Most writes change the labels of one claim, and say
which: ``labeling.runs.labels_changed(run=…, claim=…)`` puts the claim on the
run's new ``LabelStateStamp`` (a label, an undo, a stale mark, an
adjudication, a claim's citation judgments). So the run's label table is kept
in Django's cache, one entry a run, and brought up to date from the stamps
added since it was read:

- every stamp since names a claim: those claims' current labels are read
  again (one query a 900 claims on SQLite, one on PostgreSQL) and take the
  place of what the table held for them; a stamp of a write that changed no
  label (``labels=False``: members, assignments, samples, project settings)
  reads nothing;
- a stamp without a claim (an import, a judge run, a project-wide write), a
  new claims version (a split, a merge, a factual mark), more than
  :data:`MAX_DELTA` stamps since, or a stamp that became visible below the
  table's newest (next point): the table is read whole again.

What "since" means: the entry keeps the newest stamp it has seen and how many
of the run's stamps lie within ``LATE_STAMP_WINDOW`` ids below it
(``labeling.models.content.label_state``). A stamp's id is drawn at insert and
seen at commit; on PostgreSQL two writes commit in either order, so a stamp
can appear below the newest one after the table was read: that count then
differs and the table is read whole. Every read takes the state first and the
labels after it, so what the table holds for a claim is never older than the
state it is kept under, and any write it may have missed is a stamp it will
see.

Inside a transaction the application opened, the labels are read whole and
nothing is kept (its writes may roll back), as
``labeling.exports.structure`` does. ``tests/test_current_labels.py`` walks
every writer of the figure cache's walk and a random run of saves and undos,
and holds the kept table to a whole read after each.
"""

from __future__ import annotations

import hashlib
from datetime import UTC
from typing import Any

from django.core.cache import cache
from django.db import connection

from labeling.db import id_chunks
from labeling.exports.structure import in_write_transaction
from labeling.models import Answer, Claim, Label, LabelStateStamp, LabelValue, Reviewer, Run
from labeling.models.content import LATE_STAMP_WINDOW
from scoring.lazy import np, pd  # loaded on first use: keeps start-up fast (SPEC §7)

# Raise when what an entry holds changes shape or meaning: entries of the old code become unreachable.
TABLE_VERSION = 1
TIMEOUT_SECONDS = 24 * 3600
# Past this many stamps since the table was read, reading it whole costs less than the claims one by one.
MAX_DELTA = 2_000
# A label's value as a small integer in the kept arrays (pickled into the cache at every update).
_VALUES: tuple[str, ...] = tuple(LabelValue.values)
_CODES = {value: code for code, value in enumerate(_VALUES)}
_UNCITED = _CODES[LabelValue.UNCITED.value]


def current_labels(run: Run, *, factual_judged_only: bool = False) -> pd.DataFrame:
    """The current labels of ``run``'s claims as the figures read them: columns
    ``claim_id`` (int), ``reviewer`` (username), ``label``, ``kind``, by claim id
    then reviewer id. ``factual_judged_only``: only SUPPORTED/UNSUPPORTED labels
    on claims not marked "not a factual claim" (SPEC §4.3b; what agreement
    compares; UNCITED is given if and only if a claim has no citation, SPEC §3).

    Queries: the state (one), the labels of the claims written since the kept
    table (none when no claim was; else one a 900 claims on SQLite), or all the
    run's labels, then the reviewers by id (one). Whole and uncached inside a
    write's transaction (module docstring).
    """
    table = label_table(run)
    keep = (table["factual"] & (table["value"] != _UNCITED)) if factual_judged_only else None
    claim_ids, reviewer_ids, values = table["claim"], table["reviewer"], table["value"]
    if keep is not None:
        claim_ids, reviewer_ids, values = claim_ids[keep], reviewer_ids[keep], values[keep]
    ids = np.unique(reviewer_ids)  # sorted
    people = {pk: (username, kind) for pk, username, kind in Reviewer.objects.filter(
        pk__in=ids.tolist()).values_list("pk", "username", "kind")} if len(ids) else {}
    position = np.searchsorted(ids, reviewer_ids)
    names = np.array([people[pk][0] for pk in ids.tolist()], dtype=object)
    kinds = np.array([people[pk][1] for pk in ids.tolist()], dtype=object)
    return pd.DataFrame({
        "claim_id": pd.Series(claim_ids, dtype="int64"),
        "reviewer": pd.Series(names[position], dtype=object),
        "label": pd.Series(np.array(_VALUES, dtype=object)[values], dtype=object),
        "kind": pd.Series(kinds[position], dtype=object),
    })


def label_table(run: Run | int) -> dict[str, Any]:
    """The kept label table of ``run``: numpy arrays ``claim`` (int64),
    ``reviewer`` (reviewer id, int64), ``value`` (int8 index into
    ``LabelValue.values``) and ``factual`` (bool: the claim's mark), one item a
    current label, by claim id then reviewer id. Brought up to date as the
    module docstring says; the caller must not change the arrays."""
    pk = getattr(run, "pk", run)
    if in_write_transaction():
        return _read_whole(pk, None)[1]
    key = _key(pk)
    kept = cache.get(key)
    entry = _brought_up_to_date(pk, kept) if kept is not None else None
    if entry is None:
        state, arrays = _read_whole(pk, run_label_state(pk))
        entry = (state, arrays) if state is not None else None
        if entry is None:  # the run is gone
            return arrays
    if entry is not kept:
        cache.set(key, entry, timeout=TIMEOUT_SECONDS)
    return entry[1]


def _key(pk: int) -> str:
    state = repr((TABLE_VERSION, connection.settings_dict["NAME"], pk))
    return f"citelab:labels:{pk}:{hashlib.sha256(state.encode()).hexdigest()}"


def _tables() -> dict[str, str]:
    quote = connection.ops.quote_name
    return {name: quote(model._meta.db_table) for name, model in (
        ("label", Label), ("claim", Claim), ("answer", Answer), ("stamp", LabelStateStamp), ("run", Run))}


def run_label_state(pk: int) -> tuple | None:
    """``(claims_version, created_at, newest stamp id or 0, stamps in the window below it)``
    of run ``pk``, or None for a deleted run. One query."""
    sql = ("SELECT r.claims_version, r.created_at, "
           "COALESCE((SELECT max(s.id) FROM {stamp} s WHERE s.run_id = r.id), 0), "
           "(SELECT count(*) FROM {stamp} s WHERE s.run_id = r.id AND s.id > "
           "COALESCE((SELECT max(s2.id) FROM {stamp} s2 WHERE s2.run_id = r.id), 0) - %s) "
           "FROM {run} r WHERE r.id = %s").format(**_tables())
    with connection.cursor() as cursor:
        cursor.execute(sql, [LATE_STAMP_WINDOW, pk])
        row = cursor.fetchone()
    return tuple(row) if row is not None else None


def written_since(pk: int, state: tuple) -> tuple[tuple, list[tuple[int | None, bool]]] | None:
    """What was written to run ``pk`` since ``state`` (``(claims_version, created_at,
    newest stamp id, stamps in the window below it)``, as :func:`label_table` keeps it):
    ``(state now, [(claim id or None, labels) for each stamp since])``, or None when
    what was kept under ``state`` must be read whole (the run is gone or another run
    has its id, a split or merge moved the claims version, or a stamp became visible
    below the newest: module docstring). One query."""
    claims_version, created_at, newest, window = state
    sql = ("SELECT 0, r.claims_version, "
           "(SELECT count(*) FROM {stamp} s WHERE s.run_id = r.id AND s.id > %s AND s.id <= %s), "
           "COALESCE((SELECT max(s.id) FROM {stamp} s WHERE s.run_id = r.id), 0), "
           "(SELECT count(*) FROM {stamp} s WHERE s.run_id = r.id AND s.id > "
           "COALESCE((SELECT max(s2.id) FROM {stamp} s2 WHERE s2.run_id = r.id), 0) - %s), r.created_at "
           "FROM {run} r WHERE r.id = %s "
           "UNION ALL SELECT 1, s.id, s.claim, CASE WHEN s.labels THEN 1 ELSE 0 END, NULL, NULL FROM {stamp} s "
           "WHERE s.run_id = %s AND s.id > %s"
           ).format(**_tables())
    with connection.cursor() as cursor:
        cursor.execute(sql, [newest - LATE_STAMP_WINDOW, newest, LATE_STAMP_WINDOW, pk, pk, newest])
        rows = cursor.fetchall()
    head = [row for row in rows if row[0] == 0]
    if not head:
        return None
    _, version_now, window_then, newest_now, window_now, created_now = head[0]
    if (version_now, _instant(created_now), window_then) != (claims_version, _instant(created_at), window):
        return None  # a split or merge, another run under the id, or a stamp seen late below the newest
    since = [(claim, bool(labels)) for kind, _id, claim, labels, *_ in rows if kind == 1]
    return (claims_version, created_at, newest_now, window_now) if since else state, since


def _instant(value: Any) -> Any:
    """A datetime as naive UTC: SQLite's cursor gives the run's creation time naive, the ORM
    and PostgreSQL aware (a state may come from either)."""
    return value.astimezone(UTC).replace(tzinfo=None) if getattr(value, "tzinfo", None) else value


def _brought_up_to_date(pk: int, kept: tuple) -> tuple | None:
    """``kept`` (``(state, arrays)``) brought up to date, the same object when nothing
    moved, or None when the table must be read whole. One query, and the labels of
    the claims written since (module docstring)."""
    written = written_since(pk, kept[0])
    if written is None:
        return None
    state, since = written
    if not since:
        return kept
    claims = {claim for claim, labels in since if labels}
    if not claims:  # members, assignments, samples: no label moved
        return state, kept[1]
    if None in claims or len(since) > MAX_DELTA:
        return None
    return state, _with_claims_read_again(kept[1], sorted(claims))


def _read_whole(pk: int, state: tuple | None) -> tuple[tuple | None, dict[str, Any]]:
    """Every current label of run ``pk`` as the arrays of :func:`label_table`, with
    ``state`` (read before them). One query."""
    sql = ("SELECT l.claim_id, l.reviewer_id, l.value, c.factual FROM {label} l "
           "JOIN {claim} c ON c.id = l.claim_id JOIN {answer} a ON a.id = c.answer_id "
           "WHERE a.run_id = %s AND l.is_current").format(**_tables())
    with connection.cursor() as cursor:
        cursor.execute(sql, [pk])
        rows = cursor.fetchall()
    return state, _sorted(_arrays(rows))


def _with_claims_read_again(arrays: dict[str, Any], claims: list[int]) -> dict[str, Any]:
    """``arrays`` with the labels of ``claims`` read again from the database (the
    claims' ids alone: filtering by run too walked every answer per id on SQLite)."""
    sql = ("SELECT l.claim_id, l.reviewer_id, l.value, c.factual FROM {label} l "
           "JOIN {claim} c ON c.id = l.claim_id WHERE l.is_current AND l.claim_id IN ({ids})")
    rows: list = []
    with connection.cursor() as cursor:
        for chunk in id_chunks(claims):
            cursor.execute(sql.format(ids=", ".join(["%s"] * len(chunk)), **_tables()), chunk)
            rows += cursor.fetchall()
    fresh = _arrays(rows)
    keep = ~np.isin(arrays["claim"], np.asarray(claims, dtype="int64"))
    return _sorted({name: np.concatenate([column[keep], fresh[name]]) for name, column in arrays.items()})


def _arrays(rows: list) -> dict[str, Any]:
    # One list a column (zip(*rows) over 80k rows takes six times as long).
    return {
        "claim": np.array([r[0] for r in rows], dtype="int64"),
        "reviewer": np.array([r[1] for r in rows], dtype="int64"),
        "value": np.array([_CODES[r[2]] for r in rows], dtype="int8"),
        "factual": np.array([bool(r[3]) for r in rows], dtype=bool),
    }


def _sorted(arrays: dict[str, Any]) -> dict[str, Any]:
    """By claim id, then reviewer id: one order on every database and after every update."""
    order = np.lexsort((arrays["reviewer"], arrays["claim"]))
    return {name: column[order] for name, column in arrays.items()}
