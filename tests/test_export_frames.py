"""The frames of one run (``labeling.exports.frames``) read in the number of queries
their docstrings state, whatever the size of the run, on tests/counted_run.py's run:
three answers, nine claims (six cited), 18 current labels (rev1, rev2, the judge on
each cited claim), one citation judgment, one adjudication."""

from __future__ import annotations

import pytest

from labeling.exports import frames
from tests.counted_run import counted_run

pytestmark = pytest.mark.django_db


def test_each_frame_is_one_query(django_assert_num_queries):
    """Each frame in its stated queries; the structure (which answers, claims and
    citations the run has) once per claims version (labeling.exports.structure),
    so the second read of a frame skips it."""
    world = counted_run()
    run = world.run
    # The claims version, the answers, the questions with gold or an answerability.
    with django_assert_num_queries(3):
        answers = frames.answers_frame(run)
    assert answers[["question_id", "answerable", "has_gold", "cited"]].values.tolist() == [
        ["q01", None, False, 2], ["q02", None, False, 2], ["q03", False, True, 2]]
    with django_assert_num_queries(2):  # the answers cached
        assert frames.answers_frame(run).equals(answers)
    with django_assert_num_queries(1):
        assert len(frames.labels_frame(run)) == 18
    with django_assert_num_queries(1):  # with the passages' texts: not cached
        citations = frames.citations_frame(run)
    assert (len(citations), citations["fabricated"].sum()) == (6, 1)
    with django_assert_num_queries(2):  # the claims version, the citations
        plain = frames.citations_frame(run, text=False)
    with django_assert_num_queries(1):  # cached
        assert frames.citations_frame(run, text=False).equals(plain)
    assert plain.equals(citations.drop(columns=["text"]))
    with django_assert_num_queries(1):
        assert frames.judgments_frame(run)["judgment"].tolist() == ["FULL"]
    with django_assert_num_queries(1):
        judged = frames.resolved_judgments_frame(run, citations)
    assert (len(judged), judged["judgment"].notna().sum()) == (6, 1)
    # The project's gold ids and the claims version (the answers cached above).
    with django_assert_num_queries(2):
        assert frames.gold_ids_frame(run).values.tolist() == [[world.claims["q03"][0].answer_id, "P1"]]


def test_claims_frame_reads_the_answers_for_abstention(django_assert_num_queries):
    """q03's question is unanswerable, but its answer cites: no abstention."""
    world = counted_run()
    # The claims version, the claims, their texts and factual marks; then answers_frame's answers and
    # questions with gold (the version read once).
    with django_assert_num_queries(5):
        claims = frames.claims_frame(world.run)
    assert (len(claims), int((claims["n_citations"] > 0).sum()), int(claims["abstention"].sum())) == (9, 6, 0)
    assert claims["claim"].tolist() == ["One.", "Two.", "Three."] * 3
    # Cached: the version, the texts and marks, the questions.
    with django_assert_num_queries(3):
        assert frames.claims_frame(world.run).equals(claims)
    # Without the texts: only the claims marked not factual (none).
    with django_assert_num_queries(3):
        plain = frames.claims_frame(world.run, text=False)
    assert plain.equals(claims.drop(columns=["claim"]))


def test_resolved_claims_frame_query_count(django_assert_num_queries):
    """One disagreement left: q02's claim 2 (q02's claim 1 is adjudicated UNSUPPORTED)."""
    world = counted_run()
    # claims_frame's five (the version, claims, texts, answers, questions), the run's label state, the
    # labels and their reviewers (frames.current_labels), the adjudications.
    with django_assert_num_queries(9):
        claims, disagreements = frames.resolved_claims_frame(world.run)
    assert disagreements == 1
    assert claims["label"].tolist() == ["SUPPORTED", "SUPPORTED", "UNCITED", "UNSUPPORTED", None, "UNCITED",
                                        "SUPPORTED", "SUPPORTED", "UNCITED"]
    # The claims and answers cached: the version, texts, questions, labels and their reviewers,
    # adjudications.
    with django_assert_num_queries(6):
        assert frames.resolved_claims_frame(world.run)[0].equals(claims)
    # One reviewer's labels: no adjudications.
    with django_assert_num_queries(5):
        frames.resolved_claims_frame(world.run, reviewer="rev2")
    # A promoted judge not loaded with the run: its name is one more.
    world.run.promoted_judge = world.judge
    world.run.save()
    world.run.refresh_from_db()
    with django_assert_num_queries(7):
        frames.resolved_claims_frame(world.run)
