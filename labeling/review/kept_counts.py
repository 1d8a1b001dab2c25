"""The per-answer claim counts of the project and run pages, kept per run and
reviewer and brought up to date from the claims written since (SPEC §7).

The counts themselves are ``labeling.review.tallies.runs_claim_counts``' (four or
five grouped queries over a run); at 50k claims they take 200–500 ms, which every
view of the project page and the run summary paid. They depend only on what the run
holds, so they are kept in Django's cache as the run's label table is
(``labeling.exports.current_labels``): under the run's row and label state, and
after a label only the answers of the claims written since are counted again.
"""

from __future__ import annotations

import hashlib

from django.core.cache import cache
from django.db import connection

from labeling.exports.current_labels import run_label_state, written_since
from labeling.exports.structure import in_write_transaction
from labeling.models import Claim, Reviewer, Run
from labeling.models.counted import Exclusion, excludes, run_exclusion, runs_exclusions
from labeling.review.tallies import ClaimCounts, runs_claim_counts
from labeling.scores.figure_cache import TIMEOUT_SECONDS


def claim_counts_by_run(runs: list[Run], *, reviewer: Reviewer,
                        blind_run_ids: frozenset[int] = frozenset()) -> dict[int, list[ClaimCounts]]:
    """The per-answer ``ClaimCounts`` of each of ``runs`` (by run id, answers by id;
    ``[]`` for a run without claims), as :func:`runs_claim_counts` counts them for
    ``reviewer`` (their own progress is in them) on the runs of ``blind_run_ids`` from
    their labels alone.

    Kept in Django's cache, one entry a run and reviewer, under the run's row and label
    state (``labeling.scores.figure_cache``) and brought up to date as the run's label
    table is (``labeling.exports.current_labels.written_since``): when every write since
    named its claims and changed labels, only those claims' answers are counted again
    (a label save: a few rows instead of the run's 50k claims). Counted whole for a
    stamp naming no claim or no label (an import, gold, a sample: gold may move whose
    labels count), another claims version or row, a stamp seen late, more than
    :data:`COUNTS_MAX_DELTA` claims, or, on a run that leaves unqualified reviewers
    out, a label that changed who qualifies (their labels count on every answer).
    A run loaded with ``label_state`` (``run_for``, :func:`run_rows`) whose state
    stands costs no query; the runs counted whole are counted together (four or five
    queries). Inside a write's transaction nothing is kept.
    ``tests/test_kept_counts.py`` holds the kept counts to a count from scratch after
    random saves and undos; ``tests/test_figure_cache.py`` after every writer."""
    if in_write_transaction():
        counted = runs_claim_counts(reviewer=reviewer, runs=runs, blind_run_ids=blind_run_ids,
                                     exclusions=runs_exclusions(runs))
        return {run.pk: list(counted.get(run.pk, {}).values()) for run in runs}
    keys = {run.pk: _counts_key(run.pk, reviewer.pk, run.pk in blind_run_ids) for run in runs}
    kept = cache.get_many(list(keys.values()))
    entries: dict[int, tuple] = {}
    whole: list[Run] = []
    counted_now: list[int] = []  # counted whole or in part (not a state that moved with nothing since)
    for run in runs:
        entry, fields = kept.get(keys[run.pk]), _row_fields(run)
        if entry is not None and entry[0] == fields:
            state = _loaded_state(run)
            if state is not None and _same_state(entry[1], state):
                entries[run.pk] = entry
                continue
            moved = _counts_brought_up_to_date(run, entry, reviewer=reviewer, blind=run.pk in blind_run_ids)
            if moved is not None:
                entries[run.pk] = moved
                if moved[2] is not entry[2]:
                    counted_now.append(run.pk)
                continue
        whole.append(run)
    if whole:
        # The state first, then the counts: what is kept is never older than the state it is kept under.
        states = {run.pk: _loaded_state(run) or run_label_state(run.pk) for run in whole}
        exclusions = runs_exclusions(whole)
        counted = runs_claim_counts(reviewer=reviewer, runs=whole, blind_run_ids=blind_run_ids,
                                     exclusions=exclusions)
        for run in whole:
            excluded = exclusions[run.pk].reviewer_ids if run.pk in exclusions else frozenset()
            entries[run.pk] = (_row_fields(run), states[run.pk], counted.get(run.pk, {}), excluded)
            counted_now.append(run.pk)
    moved_on = {keys[pk]: entry for pk, entry in entries.items() if entry is not kept.get(keys[pk])}
    if counted_now:
        # The counts read the run's promoted judge and rule from the database, the key from the row this
        # request loaded: kept only when the row is still that one (a judge promoted meanwhile would
        # otherwise leave counts with the judge under a key without it).
        rows = {row[0]: tuple(row) for row in Run.objects.filter(pk__in=counted_now).values_list(*_RUN_FIELDS)}
        for pk in counted_now:
            if rows.get(pk) != entries[pk][0]:
                del moved_on[keys[pk]]
    if moved_on:
        cache.set_many(moved_on, timeout=TIMEOUT_SECONDS)
    return {run.pk: list(entries[run.pk][2].values()) for run in runs}


# Past this many claims written since, counting the run whole costs less (and keeps within SQLite's 999
# parameters a statement).
COUNTS_MAX_DELTA = 400
# Raise when a kept entry's shape or meaning changes: entries of the old code become unreachable.
COUNTS_VERSION = 2


def _counts_key(run_pk: int, reviewer_pk: int, blind: bool) -> str:
    name = repr((COUNTS_VERSION, connection.settings_dict["NAME"], run_pk, reviewer_pk, blind))
    return f"citelab:answer-counts:{run_pk}:{hashlib.sha256(name.encode()).hexdigest()}"


def _row_fields(run: Run) -> tuple:
    """Every field of the run's row (its promoted judge, its qualification rule, its
    claims version and creation time among them): a kept entry serves that row only."""
    return tuple(getattr(run, name) for name in _RUN_FIELDS)


def _loaded_state(run: Run) -> tuple | None:
    """``written_since``'s state of ``run`` as loaded with ``label_state``, or None."""
    if not hasattr(run, "label_state"):
        return None
    return run.claims_version, run.created_at, run.label_state or 0, run.label_window


def _same_state(kept: tuple, now: tuple) -> bool:
    # The creation time is in the row's fields; the cursor and the ORM give it in two forms.
    return (kept[0], kept[2], kept[3]) == (now[0], now[2], now[3])


def _counts_brought_up_to_date(run: Run, entry: tuple, *, reviewer: Reviewer, blind: bool) -> tuple | None:
    """``entry`` (row fields, state, counts by answer, the reviewers left out) with the
    answers of the claims written since counted again, or None when the run must be
    counted whole."""
    written = written_since(run.pk, entry[1])
    if written is None:
        return None
    state, since = written
    if not since:
        return entry[0], state, entry[2], entry[3]
    claims = {claim for claim, _labels in since}
    if None in claims or not all(labels for _claim, labels in since) or len(claims) > COUNTS_MAX_DELTA:
        return None  # a write without a claim or without a label (gold, samples: whose labels count may move)
    # Who a run leaves out may move with any label (a gold claim labeled): the answers' counts
    # alone hold only while it does not.
    exclusion = run_exclusion(run=run) if excludes(run) else Exclusion()
    if exclusion.reviewer_ids != entry[3]:
        return None
    answer_ids = sorted(set(Claim.objects.filter(pk__in=sorted(claims)).values_list("answer_id", flat=True)))
    fresh = runs_claim_counts(reviewer=reviewer, runs=[run], blind_run_ids=frozenset({run.pk}) if blind
                               else frozenset(), exclusions={run.pk: exclusion} if exclusion else None,
                               answer_ids=answer_ids).get(run.pk, {})
    answers = dict(entry[2])  # by answer id; a recounted answer keeps its place
    for pk in answer_ids:
        if pk in fresh:
            answers[pk] = fresh[pk]
        else:
            answers.pop(pk, None)  # no factual claim left
    if fresh.keys() - entry[2].keys():
        answers = dict(sorted(answers.items()))  # an answer new to the counts: back in id order
    return entry[0], state, answers, entry[3]


_RUN_FIELDS = [field.attname for field in Run._meta.concrete_fields]
