"""The structure of a run read once per claims version (SPEC §7).

A run's figures are recomputed after every label (``labeling.scores.figure_cache``),
but most of what they read does not move with a label: which answers and claims
the run has, in which order, what each cites and the cited passages. Only an
import, a claim split or a claim merge changes those rows, and each of them
bumps ``Run.claims_version`` in its transaction (``labeling.runs.claims_changed``;
``tests/test_frame_cache.py`` walks every writer of those rows). So the frames
of :mod:`labeling.exports.frames` keep that part in Django's cache, one entry
a run and structure, under a key made of

- the run's id and the structure's name;
- :data:`STRUCTURE_VERSION`, raised when the code reading a structure changes
  what it returns;
- the database's name, so two databases served by one process never share an
  entry;

holding the structure with the ``claims_version`` it was read at (and the run's
``created_at``: a project restored from another database's backup keeps its run
ids and versions, ``labeling.backup.project``, but not the same creation time).
It is served only to a reader whose run is at that version, read when the frame
is asked for (one query), so a caller holding an old Run row never meets an old structure;
another version's reader reads the structure again and replaces the entry (one
entry a run: a 50k-claim run's claims are megabytes, and a day of splits would
otherwise fill the memory with versions nobody asks for again).

What other writes change is never kept here: a claim's text (``claim_edit``)
and factual mark, a question's gold and answerability (project-wide writes),
labels, judgments; the frames read those on every call and join them.

A claims version is a counter, and a rolled-back write gives its number back:
a structure read inside a transaction that bumped it could be kept under a
number the next committed split reuses. So a structure is neither read from
nor kept in the cache inside a transaction the application opened (the frame
is read directly then); the tests' own wrapping transaction does not count.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TypeVar

from django.core.cache import cache
from django.db import connection

from labeling.models import Run

T = TypeVar("T")

# Raise when a cached structure's shape or meaning changes: entries of the old code become unreachable.
STRUCTURE_VERSION = 1
TIMEOUT_SECONDS = 24 * 3600

# Run id → (claims version, created_at) read once for the frames of one computation (:func:`one_version`).
_pinned: ContextVar[dict[int, tuple] | None] = ContextVar("citelab_structure_versions", default=None)


def in_write_transaction() -> bool:
    """Whether the code runs inside a transaction the application opened (not
    the one a Django test wraps each test in): its writes may still roll back."""
    return any(not block._from_testcase for block in connection.atomic_blocks)


def structure_key(name: str, run: Run | int) -> str:
    """The cache key of structure ``name`` of ``run`` (its value: ``((claims_version, created_at), structure)``)."""
    pk = getattr(run, "pk", run)
    state = repr((STRUCTURE_VERSION, connection.settings_dict["NAME"], pk))
    return f"citelab:structure:{name}:{pk}:{hashlib.sha256(state.encode()).hexdigest()}"


@contextmanager
def one_version() -> Iterator[None]:
    """Read each run's claims version once for every :func:`structure` inside
    the block (the frames of one figure: one query instead of one a frame, and
    every structure of the run at one version). Nested blocks share the outer
    one's versions. Keep a block to one computation: a split committed during it
    is seen by the next block."""
    if _pinned.get() is not None:
        yield
        return
    token = _pinned.set({})
    try:
        yield
    finally:
        _pinned.reset(token)


def structure(name: str, run: Run | int, read: Callable[[], T]) -> T:
    """``read()`` for ``run`` at its current claims version, read once per
    version: a hit returns what an earlier ``read()`` gave at the same version.
    ``read`` must read nothing that a write may change without
    ``labeling.runs.claims_changed`` (module docstring) and return a picklable
    value; the caller may change what it gets (the cache keeps a pickled copy).
    One query on a hit (the version; none when an enclosing :func:`one_version`
    has read it), that + ``read``'s on a miss; ``read``'s alone inside a write's
    transaction or for a deleted run."""
    if in_write_transaction():
        return read()
    pk = getattr(run, "pk", run)
    pinned = _pinned.get()
    version = pinned.get(pk) if pinned is not None else None
    if version is None:
        version = Run.objects.filter(pk=pk).values_list("claims_version", "created_at").first()
        if version is None:
            return read()
        if pinned is not None:
            pinned[pk] = version
    key = structure_key(name, run)
    kept = cache.get(key)
    if kept is not None and kept[0] == version:
        return kept[1]
    # Read after the version: what is kept under a version is never older than it.
    value = read()
    cache.set(key, (version, value), timeout=TIMEOUT_SECONDS)
    return value
