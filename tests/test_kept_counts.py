"""The per-answer claim counts of the project and run pages kept per run and reviewer
(``labeling.review.tallies.claim_counts_by_run``, SPEC §7): brought up to date from the
claims written since, they equal a count from scratch after random saves and undos by
three reviewers, counting again only the answers those claims belong to; a write that
names no claim or changes no label, a stamp seen late and a run that leaves unqualified
reviewers out are counted whole. The walk of every writer is in tests/test_figure_cache.py."""

from __future__ import annotations

import pytest
from django.test import override_settings

from labeling.models import Claim, Label, LabelStateStamp, Run
from labeling.models.content import label_state
from labeling.review import tallies
from labeling.team.gold_claims import gold_mark, quality_settings_set
from tests.counted_run import CountedRun, counted_run
from tests.test_figure_cache import NO_CACHE, _claim, _save, random_label_writes


@pytest.fixture
def recounts(monkeypatch):
    """The ``answer_ids`` of every count made (None: the run counted whole)."""
    calls: list = []
    real = tallies._runs_claim_counts

    def counted(**options):
        calls.append(options.get("answer_ids"))
        return real(**options)

    monkeypatch.setattr(tallies, "_runs_claim_counts", counted)
    return calls


def _loaded(w: CountedRun) -> Run:
    """The run as a page loads it (``run_for``: with its label state)."""
    return Run.objects.select_related("project").annotate(**label_state()).get(pk=w.run.pk)


def _kept(w: CountedRun, reviewer) -> list:
    return tallies.run_answer_counts(run=_loaded(w), reviewer=reviewer)


def _fresh(w: CountedRun, reviewer) -> list:
    with override_settings(CACHES=NO_CACHE):
        return tallies.run_answer_counts(run=_loaded(w), reviewer=reviewer)


@pytest.mark.django_db
def test_a_random_run_of_saves_and_undos_counts_the_saved_claims_answers_only(recounts):
    w = counted_run()
    reviewers = [w.rev1, w.rev2, w.lead]
    for reviewer in reviewers:
        _kept(w, reviewer)
    checked = writes = 0
    stamps = LabelStateStamp.objects.filter(run=w.run).count()
    for step, claim in random_label_writes(w, seed=11, steps=90):
        # A save of the label already there, or an undo with nothing to undo, writes nothing: nothing is
        # counted again.
        wrote = LabelStateStamp.objects.filter(run=w.run).count() > stamps
        stamps = LabelStateStamp.objects.filter(run=w.run).count()
        writes += wrote
        for viewer in reviewers:  # each keeps their own counts (their progress is in them)
            recounts.clear()
            served = _kept(w, viewer)
            assert recounts == ([[claim.answer_id]] if wrote else []), (step, viewer.username)
            assert served == _fresh(w, viewer), (step, viewer.username)
            checked += 1
    assert checked == 270 and writes > 40
    # The counts move for real: rev1's labeled count is their own cited labels, by hand from the table.
    rev1_labels = Label.objects.filter(reviewer=w.rev1, is_current=True, claim__citations__isnull=False).distinct()
    assert tallies.total_counts(_kept(w, w.rev1)).labeled == rev1_labels.count()


@pytest.mark.django_db
def test_a_state_that_stands_reads_nothing(django_assert_num_queries):
    w = counted_run()
    run = _loaded(w)
    first = tallies.run_answer_counts(run=run, reviewer=w.lead)
    with django_assert_num_queries(0):  # the counts from the cache, under the state loaded with the run
        assert tallies.run_answer_counts(run=run, reviewer=w.lead) == first
    assert tallies.total_counts(first).cited == 6  # tests/counted_run.py: two cited claims an answer


@pytest.mark.django_db
def test_writes_without_a_claim_or_a_label_and_late_stamps_count_whole(recounts):
    w = counted_run()
    _kept(w, w.lead)

    gold_mark(run=w.run, claim=_claim(w, "q02", 0), lead=w.lead, source="adjudication")  # changes no label
    recounts.clear()
    assert _kept(w, w.lead) == _fresh(w, w.lead)
    assert recounts[0] is None

    # A stamp seen late below the newest (a write committed late on PostgreSQL): counted whole.
    claim = _claim(w, "q01", 0)
    late = LabelStateStamp.objects.create(run=w.run, claim=claim.pk)
    LabelStateStamp.objects.create(run=w.run, claim=_claim(w, "q03", 0).pk)
    late_id = late.pk
    late.delete()
    before = _kept(w, w.lead)
    Label.objects.filter(claim=claim, reviewer=w.rev1, is_current=True).update(value="UNSUPPORTED")
    LabelStateStamp.objects.create(id=late_id, run=w.run, claim=claim.pk)
    recounts.clear()
    after = _kept(w, w.lead)
    assert recounts == [None] and after == _fresh(w, w.lead)
    # q01's claim 1: SUPPORTED by both before; now rev1 says UNSUPPORTED, a disagreement.
    assert tallies.total_counts(after).disagreements == tallies.total_counts(before).disagreements + 1


@pytest.mark.django_db
def test_a_run_that_leaves_unqualified_reviewers_out_is_counted_whole(recounts):
    """Any label may move who qualifies, and with it whose labels count on every answer."""
    w = counted_run()
    quality_settings_set(run=w.run, gold_rate=0.2, feedback=True, min_lower=0.5, min_gold=1,
                         exclude_unqualified=True)
    _kept(w, w.lead)
    _save(w, w.rev2, "q01", 0, "UNSUPPORTED", why="P1 says otherwise.")
    recounts.clear()
    assert _kept(w, w.lead) == _fresh(w, w.lead)
    assert recounts[0] is None
    assert Claim.objects.filter(answer__run=w.run).count() == 9
