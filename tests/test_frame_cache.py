"""A run's structure read once per claims version (``labeling.exports.structure``,
SPEC §7): a label write re-reads the labels, never the claims, answers and
citations; every write that changes a structure (split, merge, an import into
the run) moves the claims version, and what moves none (a claim's text, its
factual mark, a question's gold and answerability) is read on every call. Each
test works on tests/counted_run.py's run, whose figures by hand are: 9 claims,
6 cited (coverage 6/9); labeled cited claims q01's 1 and 2, q03's 1 and 2
(SUPPORTED) and q02's 1 (adjudicated UNSUPPORTED): support 4/5; q02's claim 2
disputed (pending)."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.core.cache import cache
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from labeling.exports import frames
from labeling.exports.structure import structure_key
from labeling.importers.load import run_import
from labeling.models import Claim, Label, Question, Reviewer, Run
from labeling.review.citation_judgments import claim_set_factual
from labeling.review.claim_edits import claim_edit, claim_merge, claim_split
from labeling.review.label_writes import label_save
from labeling.scores import metrics
from tests.counted_run import CountedRun, counted_run
from tests.model_writes import model_writers

pytestmark = pytest.mark.django_db



def _claim(w: CountedRun, qid: str, k: int) -> Claim:
    return Claim.objects.select_related("answer__run__project").get(pk=w.claims[qid][k].pk)


def _save(w: CountedRun, reviewer: Reviewer, qid: str, k: int, value: str) -> None:
    claim = _claim(w, qid, k)
    current = Label.objects.filter(claim=claim, reviewer=reviewer, is_current=True).values_list("pk", flat=True)
    label_save(claim=claim, reviewer=reviewer, value=value, justification="", base_revision=claim.revision,
               base_label_id=current.first())


def _figures(w: CountedRun) -> tuple:
    """Claims, coverage, support and pending of the run as the summary shows them."""
    c = metrics.run_scores(Run.objects.get(pk=w.run.pk), with_gold=False).claims
    return c.claims, str(c.coverage), str(c.support), c.pending


def _rows(w: CountedRun, qid: str) -> list[tuple]:
    """(index, text, citations, factual) of the claims of ``qid``'s answer."""
    claims = frames.claims_frame(w.run)
    rows = claims[claims["question_id"] == qid]
    return list(rows[["claim_index", "claim", "n_citations", "factual"]].itertuples(index=False, name=None))


def _cached(w: CountedRun) -> None:
    """Read every structure once (the summary's and the claims' texts), so the next read is a hit."""
    assert _figures(w) == (9, "6/9 = 0.67", "4/5 = 0.80", 1)
    frames.claims_frame(w.run)


def _uncached_equals_cached(w: CountedRun) -> None:
    served = metrics.run_scores(Run.objects.get(pk=w.run.pk), with_gold=False)
    cache.clear()
    fresh = metrics.run_scores(Run.objects.get(pk=w.run.pk), with_gold=False)
    assert served.claims_frame.equals(fresh.claims_frame)
    assert (served.claims, served.citation_ids, served.abstention) == (fresh.claims, fresh.citation_ids,
                                                                         fresh.abstention)


def test_a_label_write_reads_no_structure(django_assert_num_queries):
    w = counted_run()
    _cached(w)
    # rev2 agrees with rev1 on q02's claim 2: its dispute ends, SUPPORTED; 6 labeled, 5 supported.
    _save(w, w.rev2, "q02", 1, "SUPPORTED")
    run = Run.objects.get(pk=w.run.pk)

    # The claims version, the questions with gold, the claims not factual, the run's label state with the
    # stamps since its kept label table, the labels of the one claim saved and their reviewers
    # (labeling.exports.current_labels), the adjudications, the gold ids, the citation judgments: no
    # claims, answers or citations read, nothing counted but the label state's stamps.
    with CaptureQueriesContext(connection) as captured:
        scores = metrics.run_scores(run, with_gold=False)
    c = scores.claims
    assert (c.claims, str(c.coverage), str(c.support), c.pending) == (9, "6/9 = 0.67", "5/6 = 0.83", 0)
    sql = [query["sql"] for query in captured.captured_queries]
    assert len(sql) == 9
    assert not [s for s in sql if ("COUNT(" in s.upper() and "labeling_labelstatestamp" not in s)
                or 'FROM "labeling_citation"' in s or 'FROM "labeling_answer"' in s]
    # The same on the project summary: the run's row is recomputed from the cached structure.
    with CaptureQueriesContext(connection) as captured:
        row = metrics.project_summary(w.project)[0]
    assert (row.claims, row.pending, str(row.support)) == (9, 0, "5/6 = 0.83")
    assert not [q for q in captured.captured_queries
                if "COUNT(" in q["sql"].upper() and "labeling_labelstatestamp" not in q["sql"]]


def test_a_split_is_read_fresh():
    w = counted_run()
    _cached(w)
    claim_split(claim=_claim(w, "q02", 0), at=2)

    # "One." in two parts that both keep the citation of P1; later claims move down.
    assert _rows(w, "q02") == [(1, "On", 1, True), (2, "e.", 1, True), (3, "Two.", 1, True), (4, "Three.", 0, True)]
    # 10 claims, 7 cited. The split made q02's claim 1 labels (and adjudication) stale: labeled cited
    # q01's two and q03's two, all SUPPORTED; pending q02's parts (unlabeled) and claim 3 (disputed).
    assert _figures(w) == (10, "7/10 = 0.70", "4/4 = 1.00", 3)
    _uncached_equals_cached(w)


def test_a_merge_is_read_fresh():
    w = counted_run()
    _cached(w)
    claim_merge(claim=_claim(w, "q02", 0), other=_claim(w, "q02", 1))

    # q02's claims 1 and 2 as one, citing P1 once (both cited it, no span), labels stale.
    assert _rows(w, "q02") == [(1, "One. Two.", 1, True), (2, "Three.", 0, True)]
    # 8 claims, 5 cited; labeled cited q01's two and q03's two; the merged claim pending.
    assert _figures(w) == (8, "5/8 = 0.63", "4/4 = 1.00", 1)
    _uncached_equals_cached(w)


def test_a_claim_edit_is_read_fresh():
    w = counted_run()
    _cached(w)
    version = Run.objects.get(pk=w.run.pk).claims_version
    claim_edit(claim=_claim(w, "q03", 0), text="One!")

    # A text moves no claims version (runs.claims_changed): it is read on every call.
    assert Run.objects.get(pk=w.run.pk).claims_version == version
    assert _rows(w, "q03") == [(1, "One!", 1, True), (2, "Two.", 1, True), (3, "Three.", 0, True)]
    assert frames.resolved_claims_frame(w.run)[0]["claim"].tolist()[6] == "One!"
    # Its labels are stale: q03's claim 1 pending; labeled cited q01's two, q02's 1, q03's 2.
    assert _figures(w) == (9, "6/9 = 0.67", "3/4 = 0.75", 2)


def test_a_factual_mark_is_read_fresh():
    w = counted_run()
    _cached(w)
    claim_set_factual(claim=_claim(w, "q01", 0), factual=False)

    assert _rows(w, "q01") == [(1, "One.", 1, False), (2, "Two.", 1, True), (3, "Three.", 0, True)]
    # A claim not factual leaves every count (SPEC §4.3b): 8 claims, 5 cited, q01's claim 2 and q03's
    # two SUPPORTED, q02's claim 1 UNSUPPORTED.
    assert _figures(w) == (8, "5/8 = 0.63", "3/4 = 0.75", 1)
    claim_set_factual(claim=_claim(w, "q01", 0), factual=True)
    assert _figures(w) == (9, "6/9 = 0.67", "4/5 = 0.80", 1)


def _answers_line(qid: str, run: str, **more) -> str:
    return json.dumps({"question_id": qid, "question": f"Question {qid}?", "answer": "Four.", "run": run,
                       "passages": [{"id": "P1", "text": "Four."}],
                       "claims": [{"text": "Four.", "citations": ["P1"]}], **more}) + "\n"


def test_an_import_into_the_run_is_read_fresh(tmp_path):
    w = counted_run()
    _cached(w)
    path = tmp_path / "more.jsonl"
    path.write_text(_answers_line("q04", "r1"))
    run_import(project=w.project, source=path)

    # q04's answer, one claim citing P1 and no label: 10 claims, 7 cited, one more pending.
    assert _rows(w, "q04") == [(1, "Four.", 1, True)]
    assert list(frames.answers_frame(w.run)["question_id"]) == ["q01", "q02", "q03", "q04"]
    assert _figures(w) == (10, "7/10 = 0.70", "4/5 = 0.80", 2)
    _uncached_equals_cached(w)


def test_a_questions_gold_and_answerability_are_read_fresh(tmp_path):
    """Another run's file gives q01 (which r1 answers too) gold id P1 and answerable false: both
    are the question's, every run's, and move no claims version of r1."""
    w = counted_run()
    _cached(w)
    before = metrics.run_scores(Run.objects.get(pk=w.run.pk), with_gold=False)
    # By hand: gold on q03 only, whose answer cites P1 and the fabricated X: tp 1, fp 1; q03 alone
    # unanswerable, and it cites (not abstained).
    assert (before.citation_ids.gold_answers, before.citation_ids.tp, before.citation_ids.fp) == (1, 1, 1)
    assert (before.abstention.unanswerable, before.abstention.abstained) == (1, 0)
    version = Run.objects.get(pk=w.run.pk).claims_version
    path = tmp_path / "r2.jsonl"
    path.write_text(_answers_line("q01", "r2", question=Question.objects.get(project=w.project,
                                                                           question_id="q01").text,
                                  answerable=False, gold={"supporting_ids": ["P1"]}))
    run_import(project=w.project, source=path)

    assert Run.objects.get(pk=w.run.pk).claims_version == version
    answers = frames.answers_frame(w.run)
    assert answers[["question_id", "answerable", "has_gold"]].values.tolist() == [
        ["q01", False, True], ["q02", None, False], ["q03", False, True]]
    q01 = w.claims["q01"][0].answer_id
    assert sorted(frames.gold_ids_frame(w.run).itertuples(index=False, name=None)) == sorted(
        [(q01, "P1"), (w.claims["q03"][0].answer_id, "P1")])
    after = metrics.run_scores(Run.objects.get(pk=w.run.pk), with_gold=False)
    # q01's answer cites P1 twice (claims 1 and 2), one distinct id: tp 1 more, no fp.
    assert (after.citation_ids.gold_answers, after.citation_ids.tp, after.citation_ids.fp) == (2, 2, 1)
    assert (after.abstention.unanswerable, after.abstention.abstained) == (2, 0)
    _uncached_equals_cached(w)


def test_one_entry_a_run_served_at_its_claims_version_only():
    w = counted_run()
    run = Run.objects.get(pk=w.run.pk)
    key = structure_key("claims", run)
    assert key != structure_key("answers", run)
    frames.claims_frame(run)
    state, claims = cache.get(key)
    assert (state, len(claims)) == ((run.claims_version, run.created_at), 9)

    claim_split(claim=_claim(w, "q02", 0), at=2)
    # The entry of the version before stays until a reader of the new version replaces it.
    assert cache.get(key)[0] == (run.claims_version, run.created_at)
    assert len(frames.claims_frame(run)) == 10  # run: the Run row of before the split
    state, claims = cache.get(key)
    assert (state, len(claims)) == ((run.claims_version + 1, run.created_at), 10)

    # The structure of another run of the same id and version (a project restored from another
    # database's backup keeps both): another creation time, so it is not served.
    cache.set(key, ((run.claims_version + 1, run.created_at - timedelta(days=1)), claims.iloc[:1]))
    assert len(frames.claims_frame(run)) == 10


def test_inside_a_write_transaction_the_structure_is_read_afresh(django_assert_num_queries):
    """A claims version is a counter a rollback gives back: a structure read inside a
    transaction is neither served from the cache nor kept there."""
    w = counted_run()
    run = Run.objects.get(pk=w.run.pk)
    with transaction.atomic():
        # The claims, the claims not factual, the answers and questions: no claims version read.
        with django_assert_num_queries(4):
            frames.claims_frame(run, text=False)
    assert cache.get(structure_key("claims", run)) is None


# The models whose rows a cached structure holds, and the bump that moves its key.
STRUCTURE_MODELS = {"Answer", "Claim", "Citation", "Passage"}
# Modules that write those rows without claims_changed, and why.
EXEMPT = {
    "labeling/backup/project.py": "a restore writes runs with their ids and versions, but the run's created_at, "
                                  "part of the structure's state, is the archive's",
}


def test_every_module_writing_a_structure_bumps_the_claims_version():
    """A guard for the writers not yet written: a module that writes a model a
    structure holds (``Model.objects….create/update/delete``, ``insert_rows(Model``)
    calls ``claims_changed``, or says here why it need not."""
    missing = [(module, sorted(writes)) for module, writes, names in model_writers(STRUCTURE_MODELS, exempt=EXEMPT)
               if "claims_changed" not in names]
    assert missing == []
