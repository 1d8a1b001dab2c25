"""The per-answer claim counts of the project and run pages kept per run and reviewer
(``labeling.review.kept_counts.claim_counts_by_run``, SPEC §7): brought up to date from the
claims written since, they equal a count from scratch after random saves and undos by
three reviewers, counting again only the answers those claims belong to; a write that
names no claim or changes no label, a stamp seen late and a run that leaves unqualified
reviewers out are counted whole. The walk of every writer is in tests/test_figure_cache.py."""

from __future__ import annotations

import io

import pytest
from django.test import override_settings

from labeling.backup.project import project_export, project_import
from labeling.judges.runs import run_judge_promote
from labeling.models import Label, LabelStateStamp, Project, Run
from labeling.models.content import label_state
from labeling.models.counted import run_exclusion
from labeling.review import kept_counts, tallies
from labeling.review.label_writes import label_undo
from labeling.scores import metrics
from labeling.team.gold_claims import gold_mark, quality_settings_set
from tests.counted_run import CountedRun, counted_run
from tests.factories import ReviewerFactory
from tests.test_figure_cache import NO_CACHE, _claim, _save, random_label_writes


@pytest.fixture
def recounts(monkeypatch):
    """The ``answer_ids`` of every count made (None: the run counted whole)."""
    calls: list = []
    real = kept_counts.runs_claim_counts

    def counted(**options):
        calls.append(options.get("answer_ids"))
        return real(**options)

    monkeypatch.setattr(kept_counts, "runs_claim_counts", counted)
    return calls


def _loaded(w: CountedRun) -> Run:
    """The run as a page loads it (``run_for``: with its label state)."""
    return Run.objects.select_related("project").annotate(**label_state()).get(pk=w.run.pk)


def _kept(w: CountedRun, reviewer) -> list:
    return tallies.run_answer_counts(run=_loaded(w), reviewer=reviewer)


def _fresh(w: CountedRun, reviewer) -> list:
    with override_settings(CACHES=NO_CACHE):
        return tallies.run_answer_counts(run=_loaded(w), reviewer=reviewer)


def _recounted(w: CountedRun, recounts: list) -> list:
    """What the lead's kept counts counted again (``recounts``' entries), after checking
    them against a count from scratch."""
    recounts.clear()
    served = _kept(w, w.lead)
    made = list(recounts)
    assert served == _fresh(w, w.lead)
    return made


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
def test_a_run_that_leaves_unqualified_reviewers_out_recounts_whole_when_who_qualifies_moves(recounts):
    """Any label may move who qualifies, and with it whose labels count on every answer:
    a label that leaves the unqualified as they were counts its answer again, one that
    qualifies a reviewer counts the run whole."""
    w = counted_run()
    # rev1 and rev2 labeled q01's claim 1 SUPPORTED; the lead's own SUPPORTED label makes it a gold claim.
    _save(w, w.lead, "q01", 0, "SUPPORTED", why="P1 says one.")
    gold_mark(run=w.run, claim=_claim(w, "q01", 0), lead=w.lead, source="label")
    # One gold claim labeled qualifies (lower bound 0): rev1, rev2 and the lead qualify; nobody is left out.
    quality_settings_set(run=w.run, gold_rate=0.2, feedback=True, min_lower=0.0, min_gold=1,
                         exclude_unqualified=True)
    _kept(w, w.lead)

    rev3 = ReviewerFactory(username="rev3")
    w.project.memberships.create(reviewer=rev3, role="reviewer")
    # rev3 labels q02's claim 1 without a gold claim labeled: left out, a new name among the unqualified.
    _save(w, rev3, "q02", 0, "UNSUPPORTED", why="P1 says two, not one.")
    assert _recounted(w, recounts) == [None]  # who is left out moved: counted whole
    assert run_exclusion(run=w.run).names == ("rev3",)

    # rev3's next label, not on gold: still left out, so only that claim's answer is counted again.
    _save(w, rev3, "q03", 0, "SUPPORTED", why="P1 says one.")
    assert _recounted(w, recounts) == [[w.claims["q03"][0].answer_id]]

    # rev3 labels the gold claim: qualified, their labels count again everywhere.
    _save(w, rev3, "q01", 0, "SUPPORTED", why="P1 says one.")
    assert _recounted(w, recounts) == [None] and run_exclusion(run=w.run).names == ()


@pytest.mark.django_db
def test_a_judge_promoted_while_a_page_counts_is_never_kept_under_the_old_row():
    """A page loads the run (no promoted judge), a lead promotes the judge before the page
    counts (the counts read the judge from the database), then demotes it: what the page
    counted is not kept under the row it loaded. Found by a second engineer's attack."""
    w = counted_run()
    for who in (w.rev1, w.rev2):  # q01's claim 1 keeps only the judge's SUPPORTED label
        label_undo(claim=_claim(w, "q01", 0), reviewer=who)
    page = _loaded(w)
    run_judge_promote(run=Run.objects.get(pk=w.run.pk), judge=w.judge)
    with_judge = tallies.total_counts(tallies.run_answer_counts(run=page, reviewer=w.lead))
    run_judge_promote(run=Run.objects.get(pk=w.run.pk), judge=None)

    served = tallies.total_counts(_kept(w, w.lead))
    assert served == tallies.total_counts(_fresh(w, w.lead))
    # By hand (tests/counted_run.py): without the judge q01's claim 1 has no label; with it, SUPPORTED.
    assert (served.supported, with_judge.supported) == (3, 4)


@pytest.mark.django_db
def test_a_restored_project_is_never_served_what_was_kept_before_its_delete():
    """A restore keeps the runs' ids and creation times; on PostgreSQL resetting the id
    sequences used to hand a deleted project's stamp ids out again, so a restored run's
    state could equal one kept before the delete (a second engineer's attack). Sequences
    never move back now."""
    w = counted_run()
    archive = io.BytesIO()
    project_export(project=w.project, out=archive)
    _save(w, w.rev2, "q02", 1, "SUPPORTED")  # after the archive: the restore will not have it
    before = tallies.total_counts(_kept(w, w.lead))
    summary_before = metrics.project_summary(Project.objects.get(pk=w.project.pk))
    Label.objects.filter(claim__answer__run__project=w.project).delete()
    Project.objects.filter(pk=w.project.pk).delete()
    project_import(source=io.BytesIO(archive.getvalue()))
    _save(w, w.rev1, "q01", 0, "UNSUPPORTED", why="P1 says two.")

    served = tallies.total_counts(_kept(w, w.lead))
    assert served == tallies.total_counts(_fresh(w, w.lead))
    project = Project.objects.get(pk=w.project.pk)
    with override_settings(CACHES=NO_CACHE):
        fresh_summary = metrics.project_summary(project)
    assert metrics.project_summary(project) == fresh_summary != summary_before
    # By hand: q02's claim 2 is disputed again (rev2's SUPPORTED is gone), q01's claim 1 now is too.
    assert (before.disagreements, served.disagreements) == (0, 2)
