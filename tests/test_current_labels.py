"""A run's label table kept up to date label by label
(``labeling.exports.current_labels``, SPEC §7): after every writer, and after
a random run of saves and undos, the kept table equals a whole read; the
writes that name their claim are applied without one; a stamp that becomes
visible below the newest (a write committed late, PostgreSQL) is never missed."""

from __future__ import annotations

import pytest
from django.core.cache import cache
from django.db import transaction
from django.test import override_settings

from labeling.exports import current_labels as kept
from labeling.exports.current_labels import current_labels
from labeling.models import Label, LabelStateStamp, Role, Run
from labeling.scores import metrics
from labeling.scores.figure_cache import figure_key
from labeling.team.memberships import membership_set
from tests.counted_run import counted_run
from tests.factories import ReviewerFactory
from tests.test_figure_cache import NO_CACHE, _claim, _save, _writers, random_label_writes


def _whole(run: Run, **options) -> list[tuple]:
    with override_settings(CACHES=NO_CACHE):
        return _rows(current_labels(run, **options))


def _rows(frame) -> list[tuple]:
    return list(frame.itertuples(index=False, name=None))


@pytest.fixture
def whole_reads(monkeypatch):
    """How many times the table was read whole (through the cache or not)."""
    calls = []
    real = kept._read_whole

    def counted(pk, state):
        calls.append(pk)
        return real(pk, state)

    monkeypatch.setattr(kept, "_read_whole", counted)
    return calls


@pytest.mark.django_db
def test_the_counted_run_by_hand(django_assert_num_queries):
    w = counted_run()
    table = _rows(current_labels(w.run))
    # tests/counted_run.py: rev1 and the judge say SUPPORTED on the 6 cited claims; rev2 too but
    # UNSUPPORTED on q02's claims 1 and 2. By claim, then reviewer id (rev1, rev2, judge).
    claims = [c.pk for qid in ("q01", "q02", "q03") for c in w.claims[qid][:2]]
    expected = []
    for claim_id in claims:
        disputed = claim_id in (w.claims["q02"][0].pk, w.claims["q02"][1].pk)
        expected += [(claim_id, "rev1", "SUPPORTED", "human"),
                     (claim_id, "rev2", "UNSUPPORTED" if disputed else "SUPPORTED", "human"),
                     (claim_id, "judge", "SUPPORTED", "model")]
    assert table == expected

    # The state, then the reviewers by id: nothing was written since.
    with django_assert_num_queries(2):
        assert _rows(current_labels(w.run)) == expected
    # rev2 agrees on q02's claim 2: the state, that claim's labels, the reviewers.
    _save(w, w.rev2, "q02", 1, "SUPPORTED")
    with django_assert_num_queries(3):
        after = _rows(current_labels(w.run))
    assert after == [(c, r, "SUPPORTED" if (c, r) == (w.claims["q02"][1].pk, "rev2") else v, k)
                     for c, r, v, k in expected]
    assert after == _whole(w.run)
    # A new member moves the run's state but no label: the state, the reviewers, and the same table.
    membership_set(project=w.project, reviewer=ReviewerFactory(username="newcomer"), role=Role.REVIEWER)
    with django_assert_num_queries(2):
        assert _rows(current_labels(w.run)) == after


@pytest.mark.django_db
def test_after_every_writer_the_kept_table_is_a_whole_read(tmp_path, whole_reads):
    w = counted_run()
    runs = lambda: list(Run.objects.filter(project=w.project).order_by("pk"))  # noqa: E731 (run_import adds one)
    for run in runs():
        current_labels(run)
    read_whole_after = []
    for name, write in _writers(w, tmp_path):
        write()
        for run in runs():
            for options in ({}, {"factual_judged_only": True}):
                whole_reads.clear()
                served = _rows(current_labels(run, **options))
                if run.pk == w.run.pk and whole_reads:
                    read_whole_after.append(name)
                assert served == _whole(run, **options), (name, run.name, options)
    # The writes naming their one claim are applied claim by claim, those of no label (members, roles,
    # assignments, samples, send-backs, gold checks, settings) read nothing; imports, judge runs, splits,
    # merges and factual marks (a new claims version) read the table whole.
    assert read_whole_after == ["claim_set_factual", "verdicts_import", "judge_run_execute",
                                "label_table_import_apply", "claim_split", "claim_merge", "run_import"]


@pytest.mark.django_db
def test_a_random_run_of_saves_and_undos(whole_reads):
    w = counted_run()
    current_labels(w.run)
    whole_reads.clear()
    checked = 0
    for step, _claim_written in random_label_writes(w, seed=7, steps=120):
        if step % 3 == 0:
            served = _rows(current_labels(w.run))
            assert served == _whole(w.run)
            checked += 1
    assert checked == 40
    assert len(whole_reads) == checked  # _whole's own; the kept table never needed one


@pytest.mark.django_db
def test_more_writes_than_max_delta_read_the_table_whole(monkeypatch, whole_reads):
    w = counted_run()
    monkeypatch.setattr(kept, "MAX_DELTA", 2)
    current_labels(w.run)
    for value in ("SUPPORTED", "UNSUPPORTED", "SUPPORTED"):
        _save(w, w.rev2, "q01", 0, value, why="P1 says so.")
    whole_reads.clear()
    assert _rows(current_labels(w.run)) == _whole(w.run)
    assert len(whole_reads) == 2  # the kept table's and _whole's


@pytest.mark.django_db
def test_a_stamp_seen_late_below_the_newest_is_not_missed(whole_reads):
    """On PostgreSQL a write's stamp may commit after a newer one: a reader between the two
    commits sees the newer only. Played here by removing the older stamp and putting it back."""
    w = counted_run()
    claim = _claim(w, "q01", 0)
    late = LabelStateStamp.objects.create(run=w.run, claim=claim.pk)
    LabelStateStamp.objects.create(run=w.run, claim=_claim(w, "q03", 0).pk)
    late_id = late.pk
    late.delete()  # not committed yet
    summary_key = figure_key("summary_row", w.run.pk, (None, metrics.DEFAULT_RULE, metrics.DEFAULT_CONFIDENCE))
    before = _rows(current_labels(w.run))

    # The late write commits: rev1's label on q01's claim 1 becomes UNSUPPORTED, with the older stamp.
    Label.objects.filter(claim=claim, reviewer=w.rev1, is_current=True).update(value="UNSUPPORTED")
    LabelStateStamp.objects.create(id=late_id, run=w.run, claim=claim.pk)

    assert figure_key("summary_row", w.run.pk, (None, metrics.DEFAULT_RULE, metrics.DEFAULT_CONFIDENCE)) != summary_key
    whole_reads.clear()
    after = _rows(current_labels(w.run))
    assert len(whole_reads) == 1  # the count below the newest moved: read whole
    assert after == _whole(w.run)
    assert (claim.pk, "rev1", "UNSUPPORTED", "human") in after
    assert (claim.pk, "rev1", "SUPPORTED", "human") in before


@pytest.mark.django_db(transaction=True)
def test_nothing_is_kept_inside_a_write_transaction():
    w = counted_run()
    with transaction.atomic():
        inside = _rows(current_labels(w.run))
        assert cache.get(kept._key(w.run.pk)) is None
    assert _rows(current_labels(w.run)) == inside
    assert cache.get(kept._key(w.run.pk)) is not None
