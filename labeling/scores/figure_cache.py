"""Figures computed once per label state of a run (SPEC §7).

A run's figures (the project summary's row, a judge's grade, the agreement,
the scatter) rebuild its whole per-claim label table in pandas: seconds at
50k claims. They depend only on what the run holds, so they are kept in
Django's cache under a key made of the run's state:

- the run's label state: its newest ``LabelStateStamp``, a stamp added in
  the transaction of every write a figure reads (``labeling.runs.labels_changed``;
  ``tests/test_figure_cache.py`` walks every writer), and how many of its
  stamps lie within :data:`LATE_STAMP_WINDOW` ids of that newest one;
- ``Run.claims_version``, bumped by every claim split, merge and import
  (``labeling.runs.claims_changed``);
- every other field of the run row (promoted judge, queue judge, the
  qualification rule, the name …), so a change of settings needs no bump;
- :data:`FIGURES_VERSION`, raised when the code computing a figure changes
  what it returns;
- the database's name, so two databases served by one process never share
  an entry.

Why the count: a stamp's id is drawn when it is inserted, but it becomes
visible when its write commits, and on PostgreSQL two writes of one run
commit in either order. Were the newest id the whole state, a page reading
between the two commits would keep a figure under an id that the earlier
write's commit does not move: that figure would miss its label until the
next write. The late stamp adds one to the count. It is counted over a
window (:data:`LATE_STAMP_WINDOW`), not over all the run's stamps (3 ms at
50k stamps, 54 ms at 1M on PostgreSQL; the window, about 0.6 ms): a write is
seen as long as it commits before 10,000 later stamps of its run do, and the
writers stamp near the end of their transactions (SQLite commits in id order
anyway: one writer at a time).

The state is read from the database (one query), or taken from the run row
the request has just loaded (:func:`run_state_of`: the GET pages, which
write nothing before they read a figure). A write committed after that read
is seen by the next request: the figure a page shows is never older than the
state at its start.

A figure recomputed after a label reads the run's answers, claims and citations
from their own cache, kept per claims version (``labeling.exports.structure``):
only the labels and what else moved are read again.

The cache is Django's default: in memory, per server process, unless
``CITELAB_REDIS_URL`` makes it Redis, shared by every process. Either way
a stale entry is never served (a new state is a new key); an old state's
entries are evicted as the cache fills (``MAX_ENTRIES``) or expire after
:data:`TIMEOUT_SECONDS`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Hashable
from typing import TypeVar

from django.core.cache import cache
from django.db import connection

from labeling.models import Run
from labeling.models.content import LATE_STAMP_WINDOW, label_state  # noqa: F401 (the pages annotate it from here)

T = TypeVar("T")

# Raise when a cached figure's shape or meaning changes: entries of the old code become unreachable.
FIGURES_VERSION = 1
TIMEOUT_SECONDS = 24 * 3600
def run_state(run: Run | int) -> tuple:
    """The run's state as the key of its figures: every field of its row
    (``claims_version`` among them), in field order, then its label state
    (:func:`label_state`: the newest stamp and the count below it). One query.
    Raises ``Run.DoesNotExist`` for a deleted run."""
    row = (Run.objects.filter(pk=getattr(run, "pk", run)).annotate(**label_state())
           .values_list(*_FIELDS, "label_state", "label_window").first())
    if row is None:
        raise Run.DoesNotExist(f"run {getattr(run, 'pk', run)} does not exist")
    return row


def run_state_of(run: Run) -> tuple:
    """:func:`run_state` from a Run instance the caller has just loaded whole,
    annotated with :func:`label_state` (no query): for a page that reads many
    runs in one query, or the run of a GET view (``permissions.visible_runs``
    annotates it). Raises AttributeError without the annotation."""
    return (*(getattr(run, name) for name in _FIELDS), run.label_state, run.label_window)


_FIELDS = [field.attname for field in Run._meta.concrete_fields]


def figure_key(name: str, run: Run | int, parts: tuple[Hashable, ...] = (), *, state: tuple | None = None) -> str:
    """The cache key of figure ``name`` of ``run`` at its current state with
    the caller's ``parts`` (options that change the figure: reviewer, rule,
    confidence …). One query (:func:`run_state`), none with ``state``."""
    state = repr((FIGURES_VERSION, connection.settings_dict["NAME"], state or run_state(run), parts))
    return f"citelab:figure:{name}:{getattr(run, 'pk', run)}:{hashlib.sha256(state.encode()).hexdigest()}"


def cached_figure(name: str, run: Run | int, compute: Callable[[], T], *, parts: tuple[Hashable, ...] = (),
                  state: tuple | None = None) -> T:
    """``compute()`` for ``run`` at its current state, computed once per state:
    a hit returns the value computed earlier for the same state and ``parts``.
    ``compute`` must read nothing but the run's state (what
    ``labeling.runs.labels_changed`` and ``claims_changed`` version) and must
    return a picklable value, never None. ``state``: :func:`run_state_of` a run
    loaded in this request, else it is read. One query on a hit (none with
    ``state``), that + ``compute``'s on a miss."""
    key = figure_key(name, run, parts, state=state)
    value = cache.get(key)
    if value is None:
        value = compute()
        cache.set(key, value, timeout=TIMEOUT_SECONDS)
    return value
