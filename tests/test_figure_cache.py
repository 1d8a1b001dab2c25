"""Figures computed once per label state (``labeling.scores.figure_cache``,
SPEC §7): a hit serves what a recompute gives, and after every write a figure
reads, the figure served is the fresh one, never the cached one of the state
before. The walk goes through every writer, in one world, in an order where
each write changes something (tests/counted_run.py's run)."""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator
from contextlib import suppress
from pathlib import Path

import pytest
from django.core.exceptions import ValidationError
from django.db import connection
from django.test import Client, override_settings
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from labeling.importers.label_table import read_label_table
from labeling.importers.load import run_import
from labeling.importers.verdicts import VerdictRecord
from labeling.judges.protocol import JudgeEndpoint
from labeling.judges.runs import (
    judge_run_create,
    judge_run_execute,
    run_judge_promote,
    run_queue_judge_set,
    verdicts_import,
)
from labeling.models import Claim, Label, Membership, Question, Reviewer, Role, Run
from labeling.review import tallies
from labeling.review.citation_judgments import claim_judge, claim_set_factual
from labeling.review.claim_edits import claim_edit, claim_merge, claim_split
from labeling.review.label_writes import label_save, label_undo
from labeling.runs import run_rename
from labeling.scores import figure_cache, metrics
from labeling.scores.figure_cache import figure_key
from labeling.scores.samples import sample_draw, sample_target_set
from labeling.tables.label_import import label_table_import_apply
from labeling.team.adjudication import adjudication_save
from labeling.team.gold_claims import GoldRow, gold_import, gold_mark, gold_unmark, quality_settings_set
from labeling.team.memberships import (
    membership_remove,
    membership_set,
    project_settings_set,
    run_assign,
    run_settings_set,
)
from labeling.team.send_backs import send_back_create, send_back_reply
from tests.counted_run import CountedRun, counted_run
from tests.factories import ReviewerFactory
from tests.judge_server import JudgeServer
from tests.label_table_files import csv_bytes
from tests.model_writes import model_writers

NO_CACHE = {"default": {"BACKEND": "django.core.cache.backends.dummy.DummyCache"}}


def _fresh(w: CountedRun) -> list:
    """The summary rows computed now, without any cache (figures, structures, label tables)."""
    with override_settings(CACHES=NO_CACHE):
        return [metrics._summary_row(run, None, metrics.DEFAULT_RULE, metrics.DEFAULT_CONFIDENCE) for run in
                Run.objects.filter(project=w.project).select_related("project").order_by("created_at", "name")]


def _claim(w: CountedRun, qid: str, k: int) -> Claim:
    return Claim.objects.select_related("answer__run__project").get(pk=w.claims[qid][k].pk)


def _current(reviewer: Reviewer, claim: Claim) -> int | None:
    return Label.objects.filter(claim=claim, reviewer=reviewer, is_current=True).values_list("pk", flat=True).first()


def _save(w: CountedRun, reviewer: Reviewer, qid: str, k: int, value: str, why: str = "") -> None:
    claim = _claim(w, qid, k)
    label_save(claim=claim, reviewer=reviewer, value=value, justification=why, base_revision=claim.revision,
               base_label_id=_current(reviewer, claim))


def random_label_writes(w: CountedRun, *, seed: int, steps: int) -> Iterator[tuple[int, Claim]]:
    """``steps`` random saves (70%) and undos by rev1, rev2 and the lead on the cited claims of
    tests/counted_run.py's run; yields the step and the claim written (or tried: an undo with
    nothing to undo, a save of the label already there write nothing)."""
    rng = random.Random(seed)
    reviewers = [w.rev1, w.rev2, w.lead]
    cells = [(qid, k) for qid in ("q01", "q02", "q03") for k in (0, 1)]
    for step in range(steps):
        reviewer, (qid, k) = rng.choice(reviewers), rng.choice(cells)
        if rng.random() < 0.3:
            with suppress(ValidationError):  # refused when nothing of theirs is there to undo
                label_undo(claim=_claim(w, qid, k), reviewer=reviewer)
        else:
            # q03's claim 2 cites a fabricated id: UNSUPPORTED is its only label.
            value = "UNSUPPORTED" if (qid, k) == ("q03", 1) else rng.choice(["SUPPORTED", "UNSUPPORTED"])
            _save(w, reviewer, qid, k, value, why="P1 says so.")
        yield step, w.claims[qid][k]


def _judged(w: CountedRun) -> None:
    claim = _claim(w, "q01", 1)
    citation = claim.citations.get()
    claim_judge(claim=claim, reviewer=w.rev2, judgments={citation.pk: "NONE"}, base_revision=claim.revision,
                base_label_id=_current(w.rev2, claim), justification="P1 does not say two.")


def _judge_run(w: CountedRun) -> None:
    verdicts = {str(pk): "UNSUPPORTED" for pk in Claim.objects.filter(answer__run=w.run).values_list("pk", flat=True)}
    with JudgeServer(labels_by_id=verdicts) as server:
        judge_run = judge_run_create(run=w.run, reviewer_name="judge", relabel=True,
                                     endpoint=JudgeEndpoint(model="fake", base_url=server.base_url))
        assert judge_run_execute(judge_run.pk, api_key="k").claims_labeled > 0


def _label_file(w: CountedRun) -> None:
    claim = _claim(w, "q03", 0)
    rows = [["claim_id", "label", "justification"], [claim.pk, "UNSUPPORTED", "P1 is about another thing."]]
    label_table_import_apply(run=w.run, reviewer=w.rev2, table_file=read_label_table(csv_bytes(rows), format="csv"))


def _answers_file(w: CountedRun, tmp_path: Path) -> None:
    path = tmp_path / "more.jsonl"
    path.write_text(json.dumps({
        "question_id": "q01", "question": Question.objects.get(project=w.project, question_id="q01").text,
        "answer": "Four.", "run": "r2",
        "passages": [{"id": "P1", "text": "Four."}],
        "claims": [{"text": "Four.", "citations": ["P1"], "label": "SUPPORTED", "reviewer": "rev9"}],
        # Gold for q01, which r1 answers too: a question's gold is every run's.
        "gold": {"supporting_ids": ["P1"]},
    }) + "\n")
    run_import(project=w.project, source=path)


def _answers_file_again(w: CountedRun, tmp_path: Path) -> None:
    """The same file again: nothing changes, so no run's state moves (checked below)."""
    run_import(project=w.project, source=tmp_path / "more.jsonl")


# Each writer, in an order where each one changes what it writes (a send-back before its reply, a gold
# mark before its unmark, a member added before removed).
def _writers(w: CountedRun, tmp_path: Path) -> list[tuple[str, Callable[[], object]]]:
    newcomer = ReviewerFactory(username="newcomer")
    return [
        ("label_save", lambda: _save(w, w.rev2, "q02", 1, "SUPPORTED")),
        ("label_undo", lambda: label_undo(claim=_claim(w, "q02", 1), reviewer=w.rev2)),
        ("claim_judge", lambda: _judged(w)),
        ("claim_set_factual", lambda: claim_set_factual(claim=_claim(w, "q01", 2), factual=False)),
        ("adjudication_save", lambda: adjudication_save(claim=_claim(w, "q02", 1), lead=w.lead, value="SUPPORTED",
                                                        reason="P1 says two.")),
        ("send_back_create", lambda: send_back_create(run=w.run, claim=_claim(w, "q01", 0), reviewer=w.rev1,
                                                      lead=w.lead, comment="Look again.")),
        ("send_back_reply", lambda: send_back_reply(claim=_claim(w, "q01", 0), reviewer=w.rev1,
                                                    reply="P1 says one.")),
        ("gold_mark", lambda: gold_mark(run=w.run, claim=_claim(w, "q02", 0), lead=w.lead, source="adjudication")),
        ("gold_unmark", lambda: gold_unmark(run=w.run, claim=_claim(w, "q02", 0), lead=w.lead)),
        ("gold_import", lambda: gold_import(run=w.run, rows=[GoldRow(2, "q01", 1, "SUPPORTED", "P1 says one.")],
                                            actor=w.lead)),
        ("quality_settings_set", lambda: quality_settings_set(run=w.run, gold_rate=0.2, feedback=True,
                                                              min_lower=0.5, min_gold=1, exclude_unqualified=True)),
        ("sample_draw", lambda: sample_draw(run=w.run, answers=2, seed=7, actor=w.lead)),
        ("sample_target_set", lambda: sample_target_set(run=w.run, half_width=0.1, actor=w.lead)),
        ("membership_set", lambda: membership_set(project=w.project, reviewer=newcomer, role=Role.REVIEWER)),
        ("membership_remove", lambda: membership_remove(project=w.project, reviewer=newcomer)),
        ("project_settings_set", lambda: project_settings_set(project=w.project, judge_citations=True,
                                                              require_justification_for_supported=True)),
        ("run_settings_set", lambda: run_settings_set(run=w.run, overlap=2)),
        ("run_assign", lambda: run_assign(run=w.run, reviewers=[w.rev1, w.rev2])),
        ("run_judge_promote", lambda: run_judge_promote(run=w.run, judge=w.judge)),
        ("run_queue_judge_set", lambda: run_queue_judge_set(run=w.run, judge=w.judge)),
        ("verdicts_import", lambda: verdicts_import(run=w.run, reviewer_name="judge", records=[
            VerdictRecord(line=1, question_id="q03", label="UNSUPPORTED", claim_index=1)], model="m")),
        ("judge_run_execute", lambda: _judge_run(w)),
        ("label_table_import_apply", lambda: _label_file(w)),
        ("claim_edit", lambda: claim_edit(claim=_claim(w, "q03", 0), text="One!")),
        ("claim_split", lambda: claim_split(claim=_claim(w, "q02", 0), at=2)),
        ("claim_merge", lambda: claim_merge(claim=_claim(w, "q02", 0), other=Claim.objects.get(
            answer=_claim(w, "q02", 0).answer, index=2))),
        ("run_import", lambda: _answers_file(w, tmp_path)),
        ("run_rename", lambda: run_rename(run=w.run, user=w.lead, name="r1-renamed")),
    ]


@pytest.mark.django_db
def test_a_hit_serves_what_a_recompute_gives(django_assert_num_queries):
    w = counted_run()
    first = metrics.project_summary(w.project)

    # The runs, and nothing else: the row comes from the cache.
    with django_assert_num_queries(1):
        again = metrics.project_summary(w.project)

    assert again == first == _fresh(w)
    # Hand-checked on tests/counted_run.py: 9 claims, 6 cited; labeled cited: q01's 2, q02's claim 1
    # (adjudicated UNSUPPORTED), q03's 2 → 5 labeled; q02's claim 2 disputed (pending).
    row = first[0]
    assert (row.claims, row.pending, str(row.coverage), str(row.support)) == (9, 1, "6/9 = 0.67", "4/5 = 0.80")


def _counts(w: CountedRun) -> list:
    """The project page's claim counts of every run, per answer (``tallies.run_rows``), as the lead sees them."""
    return [(row.run.name, row.answers, row.answer_counts) for row in tallies.run_rows(project=w.project,
                                                                                        reviewer=w.lead)]


def _fresh_counts(w: CountedRun) -> list:
    with override_settings(CACHES=NO_CACHE):
        return _counts(w)


# Writers of what no figure reads (test_no_figure_reads_members_or_project_settings): they leave every
# run's state as it is, so a role change does not recompute ten runs' figures.
READ_BY_NO_FIGURE = {"membership_set", "membership_remove", "project_settings_set"}


@pytest.mark.django_db
def test_every_writer_makes_the_next_read_fresh(tmp_path):
    w = counted_run()
    walked = []
    for name, write in _writers(w, tmp_path):
        served_before = metrics.project_summary(w.project)
        key_before = figure_key("summary_row", w.run.pk, (None, metrics.DEFAULT_RULE, metrics.DEFAULT_CONFIDENCE))
        write()
        key_after = figure_key("summary_row", w.run.pk, (None, metrics.DEFAULT_RULE, metrics.DEFAULT_CONFIDENCE))

        if name in READ_BY_NO_FIGURE:
            assert key_after == key_before, f"{name} moved the run's state: every figure of every run recomputed"
        else:
            assert key_after != key_before, f"{name} left the run's state unchanged: its cached figures stay served"
        assert metrics.project_summary(w.project) == _fresh(w), f"stale figures served after {name}"
        assert _counts(w) == _fresh_counts(w), f"stale claim counts served after {name}"
        walked.append((name, served_before != _fresh(w)))

    # These writes change a figure the summary shows (worked by hand: rev2's NONE judgment makes q01's
    # claim 2 disputed; the imported verdict counts once the judge is promoted; rev2's UNSUPPORTED from the
    # file leaves q03's claim 1 disputed as the judge's run made it). The others change what other figures
    # read (a send-back, a sample, gold, assignments, the queue judge) and the run's state moved all the same;
    # members and project settings move none (READ_BY_NO_FIGURE).
    assert [name for name, changed in walked if changed] == [
        "label_save", "label_undo", "claim_judge", "claim_set_factual", "adjudication_save", "quality_settings_set",
        "run_judge_promote", "verdicts_import", "judge_run_execute", "claim_edit", "claim_split", "claim_merge",
        "run_import", "run_rename"]


# The models whose rows the cached figures read, and the functions that say a run's state moved.
FIGURE_MODELS = {"Label", "CitationJudgment", "Adjudication", "GoldClaim", "SendBack", "Sample", "SampleMember",
                 "Assignment", "Claim", "Citation", "Question", "GoldPassageId", "GoldReference",
                 "ExpectedSource"}
BUMPS = {"labels_changed", "project_labels_changed", "claims_changed", "mark_labels_stale"}
# Modules that write those rows without a bump, and why.
EXEMPT = {
    "labeling/backup/project.py": "a restore writes the runs' stamps with their ids, and ids never move back "
                                  "(tests/test_kept_counts.py: a restored project)",
    "labeling/team/reviewers.py": "a new reviewer's memberships: no label of theirs yet",
    "labeling/integrations/sso.py": "a login's memberships from the identity provider: no label of theirs yet",
    "labeling/review/queue.py": "leases only (ClaimLease): no figure reads them",
    "labeling/review/claim_edits.py": "every write is under mark_labels_stale or claims_changed (tested above)",
    "labeling/importers/gold.py": "only inside importers/load.records_import, which adds the stamps (it says whether "
                                  "gold changed)",
}


def test_every_module_writing_what_a_figure_reads_bumps_the_state():
    """A guard for the writers not yet written: a module that writes a model the
    figures read (``Model.objects….create/update/delete``, ``insert_rows(Model``)
    calls one of the bumps, or says here why it need not."""
    missing = [(module, sorted(writes)) for module, writes, names in model_writers(FIGURE_MODELS, exempt=EXEMPT)
               if not names & BUMPS]
    assert missing == []


@pytest.mark.django_db
def test_the_grading_page_is_fresh_after_a_judge_label_changes():
    w = counted_run()
    client = Client()
    client.force_login(w.lead)
    url = reverse("judge_grade", kwargs={"project_slug": "counts", "run_name": "r1", "judge_name": "judge"})
    before = client.get(url).context["grade"].to_dict()
    assert client.get(url).context["grade"].to_dict() == before  # the cached grade

    verdicts_import(run=w.run, reviewer_name="judge", records=[
        VerdictRecord(line=1, question_id="q01", label="UNSUPPORTED", claim_index=1)], model="m")

    after = client.get(url).context["grade"].to_dict()
    # The judge now says UNSUPPORTED where the humans say SUPPORTED on q01's claim 1: one disagreement more.
    assert len(after["disagreements"]) == len(before["disagreements"]) + 1
    assert _claim(w, "q01", 0).pk in {row["claim_id"] for row in after["disagreements"]}


@pytest.mark.django_db
def test_the_agreement_and_scatter_pages_are_fresh_after_a_label():
    w = counted_run()
    client = Client()
    client.force_login(w.lead)
    run_url = {"project_slug": "counts", "run_name": "r1"}
    agreement, scatter = reverse("run_agreement", kwargs=run_url), reverse("run_scatter", kwargs=run_url)
    disputed = client.get(agreement).context["result"].disputed
    points = client.get(scatter).context["chart"]
    assert client.get(agreement).context["result"].disputed == disputed  # cached

    # rev2 agrees with rev1 on q02's claim 2: its dispute ends.
    _save(w, w.rev2, "q02", 1, "SUPPORTED")

    assert client.get(agreement).context["result"].disputed == [c for c in disputed if c != w.claims["q02"][1].pk]
    assert disputed == [w.claims["q02"][0].pk, w.claims["q02"][1].pk]  # claim 1 adjudicated, still listed
    assert client.get(scatter).context["chart"] != points


@pytest.mark.django_db
def test_an_import_moves_the_state_of_the_runs_it_changes_only(tmp_path):
    w = counted_run()
    parts = (None, metrics.DEFAULT_RULE, metrics.DEFAULT_CONFIDENCE)
    _answers_file(w, tmp_path)  # run r2, and gold for q01 (r1 answers it too)
    r2 = Run.objects.get(project=w.project, name="r2")
    keys = {run: figure_key("summary_row", run.pk, parts) for run in (w.run, r2)}

    # The same file again changes nothing shared: r1's figures stay cached (r2's are recomputed once:
    # every import of a run says its claims may have changed, runs.claims_changed).
    _answers_file_again(w, tmp_path)
    assert figure_key("summary_row", w.run.pk, parts) == keys[w.run]
    keys[r2] = figure_key("summary_row", r2.pk, parts)

    # A new label on r2's answer, no gold: r2 moves, r1 does not.
    line = json.loads((tmp_path / "more.jsonl").read_text())
    line["claims"][0]["labels"] = [{"label": "UNSUPPORTED", "reviewer": "rev8", "justification": "P1 is not four."}]
    del line["claims"][0]["label"], line["claims"][0]["reviewer"], line["gold"]
    (tmp_path / "more.jsonl").write_text(json.dumps(line) + "\n")
    _answers_file_again(w, tmp_path)
    assert figure_key("summary_row", w.run.pk, parts) == keys[w.run]
    assert figure_key("summary_row", r2.pk, parts) != keys[r2]
    assert metrics.project_summary(w.project) == _fresh(w)


class _ComputeWindows:
    """A cache that never hits and notes, for each figure computed, the queries
    made between its ``get`` (the miss) and its ``set``: the figure's own reads."""

    def __init__(self, captured: CaptureQueriesContext) -> None:
        self.captured, self.start, self.windows = captured, 0, []

    def get(self, key, default=None):
        self.start = len(self.captured.captured_queries)
        return default

    def set(self, key, value, timeout=None):
        self.windows.append((key.split(":")[2], [q["sql"] for q in self.captured.captured_queries[self.start:]]))


@pytest.mark.django_db
def test_no_figure_reads_members_or_project_settings(monkeypatch):
    """Why READ_BY_NO_FIGURE may leave the state alone: every cached figure (the
    summary row, the agreement and judgments' agreement, a judge's grade, the
    scatter), computed through its page, reads neither the membership table nor
    the project's settings columns."""
    w = counted_run()
    client = Client()
    client.force_login(w.lead)
    run_url = {"project_slug": "counts", "run_name": "r1"}
    with CaptureQueriesContext(connection) as captured:
        windows = _ComputeWindows(captured)
        monkeypatch.setattr(figure_cache, "cache", windows)
        for url in (reverse("project_summary", kwargs={"project_slug": "counts"}),
                    reverse("run_agreement", kwargs=run_url), reverse("run_scatter", kwargs=run_url),
                    reverse("judge_grade", kwargs={**run_url, "judge_name": "judge"})):
            assert client.get(url).status_code == 200, url

    assert sorted({name for name, _sql in windows.windows}) == [
        "agreement", "judge_grade", "judgment_agreement", "scatter", "summary_row"]
    membership = Membership._meta.db_table
    for name, queries in windows.windows:
        assert queries, name  # each computed from the database, not from another cache
        for sql in queries:
            assert membership not in sql, (name, sql)
            assert "judge_citations" not in sql and "require_justification" not in sql, (name, sql)
    # The check can see them: the pages themselves read both (who may open the run, its project).
    assert any(membership in q["sql"] for q in captured.captured_queries)
    assert any("judge_citations" in q["sql"] for q in captured.captured_queries)


@pytest.mark.django_db
@pytest.mark.parametrize(("reviewer", "rule", "confidence"), [(None, "strict", 0.95), ("rev2", "lenient", 0.9)])
def test_a_summary_row_is_what_run_scores_gives(reviewer, rule, confidence):
    """The row computes only what it shows (metrics._summary_row); each figure and
    interval is the one of the full ``run_scores``."""
    w = counted_run()
    _judged(w)  # a judged citation: citation precision has a value
    with override_settings(CACHES=NO_CACHE):
        row = metrics.project_summary(w.project, reviewer=reviewer, rule=rule, confidence=confidence)[0]
    scores = metrics.run_scores(w.run, reviewer=reviewer, citation_precision_rule=rule, with_gold=False,
                                confidence=confidence)
    full = scores.intervals()

    c = scores.claims
    assert (row.answers, row.claims, row.pending, row.coverage, row.support, row.supported_rate, row.gap) == (
        c.answers, c.claims, c.pending, c.coverage, c.support, c.supported_rate, c.gap)
    assert row.citation_precision == scores.judgments.precision
    assert row.intervals == {**{name: full[name] for name in ("coverage", "support", "supported_rate", "gap")},
                             "citation_precision": full["judged_precision"]}
    if reviewer is None:
        # By hand on tests/counted_run.py: 6 of 9 claims cited; two citations judged (q01's claim 1 FULL by
        # rev1, claim 2 NONE by rev2 here), one precise.
        assert (str(row.coverage), str(row.citation_precision)) == ("6/9 = 0.67", "1/2 = 0.50")


@pytest.mark.django_db
def test_admin_edits_of_what_figures_read_move_the_runs_state(admin_client):
    """A reviewer's kind, a question's answerability and an answer changed in the admin (a
    second engineer's attack: the admin wrote them with no stamp, and a cached figure stayed
    served): the summary and the page's counts served after are the fresh ones."""
    w = counted_run()
    metrics.project_summary(w.project)
    _counts(w)
    rev2 = Reviewer.objects.get(pk=w.rev2.pk)
    response = admin_client.post(reverse("admin:labeling_reviewer_change", args=[rev2.pk]), {
        "username": rev2.username, "kind": "model", "is_active": "on", "date_joined_0": "2025-01-01",
        "date_joined_1": "00:00:00", "initial-date_joined_0": "2025-01-01", "initial-date_joined_1": "00:00:00"})
    assert response.status_code == 302, response.content.decode()[:2000]
    assert Reviewer.objects.get(pk=rev2.pk).kind == "model"
    assert metrics.project_summary(w.project) == _fresh(w)
    assert _counts(w) == _fresh_counts(w)
    # By hand on tests/counted_run.py: rev2's labels no longer count, so q02's claim 2 (rev1 SUPPORTED,
    # rev2 UNSUPPORTED) is no longer disputed but SUPPORTED; claim 1 stays adjudicated UNSUPPORTED. Of
    # the 6 cited claims all are labeled, 5 SUPPORTED (was 4/5, claim 2 pending).
    assert (tallies.total_counts(_counts(w)[0][2]).disagreements, str(_fresh(w)[0].support)) == (0, "5/6 = 0.83")
