"""Figures computed once per label state of a run (SPEC §7).

A run's figures (the project summary's row, a judge's grade, the agreement,
the scatter) rebuild its whole per-claim label table in pandas: seconds at
50k claims. They depend only on what the run holds, so they are kept in
Django's cache under a key made of the run's state:

- the run's label state (its newest ``LabelStateStamp``), a stamp added in
  the transaction of every write a figure reads (``labeling.runs.labels_changed``;
  ``tests/test_figure_cache.py`` walks every writer);
- ``Run.claims_version``, bumped by every claim split, merge and import
  (``labeling.runs.claims_changed``);
- every other field of the run row (promoted judge, queue judge, the
  qualification rule, the name …), so a change of settings needs no bump;
- :data:`FIGURES_VERSION`, raised when the code computing a figure changes
  what it returns;
- the database's name, so two databases served by one process never share
  an entry.

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
from django.db.models import OuterRef, Subquery

from labeling.models import LabelStateStamp, Run

T = TypeVar("T")

# Raise when a cached figure's shape or meaning changes: entries of the old code become unreachable.
FIGURES_VERSION = 1
TIMEOUT_SECONDS = 24 * 3600


def label_state() -> Subquery:
    """The newest label state stamp of the run at ``OuterRef("pk")`` (None
    before the first): annotate it as ``label_state`` on the runs a page
    loads, for :func:`run_state_of`. An index probe a run."""
    return Subquery(LabelStateStamp.objects.filter(run=OuterRef("pk")).order_by("-id").values("id")[:1])


def run_state(run: Run | int) -> tuple:
    """The run's state as the key of its figures: every field of its row
    (``claims_version`` among them), in field order, then its newest label
    state stamp. One query. Raises ``Run.DoesNotExist`` for a deleted run."""
    row = Run.objects.filter(pk=getattr(run, "pk", run)).values_list(*_FIELDS, label_state()).first()
    if row is None:
        raise Run.DoesNotExist(f"run {getattr(run, 'pk', run)} does not exist")
    return row


def run_state_of(run: Run) -> tuple:
    """:func:`run_state` from a Run instance the caller has just loaded whole,
    annotated with :func:`label_state` (no query): for a page that reads many
    runs in one query, or the run of a GET view (``permissions.visible_runs``
    annotates it). Raises AttributeError without the annotation."""
    return (*(getattr(run, name) for name in _FIELDS), run.label_state)


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
