"""The run progress bar's denominator: the run's cited claims, counted once and
kept in a versioned cache on the run (``tallies.run_cited_claims``) that every
write changing claims invalidates (``runs.claims_changed``)."""

from __future__ import annotations

import pytest

from labeling import runs
from labeling.importers.load import run_import
from labeling.models import Run
from labeling.review import claim_edits, tallies
from tests.factories import (
    AnswerFactory,
    CitationFactory,
    ClaimFactory,
    LabelFactory,
    PassageFactory,
    ProjectFactory,
    ReviewerFactory,
    RunFactory,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def run():
    """Run r1, one answer with claims 1 (cites P1), 2 (no citation), 3 (cites P1 and P2): 2 cited claims."""
    run = RunFactory(project=ProjectFactory(slug="p"), name="r1")
    answer = AnswerFactory(run=run, text="A is 1. B is 2. C is 3.")
    p1, p2 = PassageFactory(answer=answer, passage_id="P1"), PassageFactory(answer=answer, passage_id="P2")
    c1 = ClaimFactory(answer=answer, index=1, text="A is 1.", start=0, end=7)
    ClaimFactory(answer=answer, index=2, text="B is 2.", start=8, end=15)
    c3 = ClaimFactory(answer=answer, index=3, text="C is 3.", start=16, end=23)
    CitationFactory(claim=c1, passage=p1, position=0, cited_id="P1")
    CitationFactory(claim=c3, passage=p1, position=0, cited_id="P1")
    CitationFactory(claim=c3, passage=p2, position=1, cited_id="P2")
    return run


def fresh(run: Run) -> Run:
    return Run.objects.get(pk=run.pk)


def test_cited_claims_are_counted_once_then_read_from_the_run(run, django_assert_num_queries):
    assert (run.cited_claims, run.cited_claims_version, run.claims_version) == (None, None, 0)
    # One statement counts (and reads the version), one UPDATE stores the count.
    with django_assert_num_queries(2):
        assert tallies.run_cited_claims(run=run) == 2
    stored = fresh(run)
    assert (stored.cited_claims, stored.cited_claims_version, stored.claims_version) == (2, 0, 0)
    with django_assert_num_queries(0):
        assert tallies.run_cited_claims(run=stored) == 2


def test_split_makes_the_count_stale_and_the_next_read_recounts(run):
    tallies.run_cited_claims(run=run)
    c3 = run.answers.get().claims.get(index=3)
    citations = list(c3.citations.order_by("position").values_list("pk", flat=True))

    # C's citations go one to each part: 2 cited claims become 3.
    claim_edits.claim_split(claim=c3, at=2, first_citation_ids=citations[:1], second_citation_ids=citations[1:])

    stored = fresh(run)
    assert (stored.claims_version, stored.cited_claims_version, stored.cited_claims) == (1, 0, 2)
    assert tallies.run_cited_claims(run=stored) == 3
    assert (fresh(run).cited_claims, fresh(run).cited_claims_version) == (3, 1)


def test_merge_of_an_uncited_and_a_cited_claim_leaves_one_cited_claim_fewer_uncited(run):
    tallies.run_cited_claims(run=run)
    claims = {c.index: c for c in run.answers.get().claims.all()}

    # Claims 1 (cited) and 2 (uncited) become one cited claim: still 2 cited claims, 2 claims in all.
    claim_edits.claim_merge(claim=claims[1], other=claims[2])
    # Claims 1 (now A+B, cited) and 2 (was C, cited) merge: 1 cited claim.
    merged = run.answers.get().claims.order_by("index")
    claim_edits.claim_merge(claim=merged[0], other=merged[1])

    stored = fresh(run)
    assert stored.claims_version == 2
    assert tallies.run_cited_claims(run=stored) == 1


def test_a_count_taken_before_a_change_is_not_stored_after_it(run):
    """A recount that read version 0 must not store its count once a split moved the version on."""
    stale = fresh(run)
    runs.claims_changed(run=run)  # a write committed between the page's load of the run and its count
    assert tallies.run_cited_claims(run=stale) == 2  # counts: the loaded run had no valid cache
    stored = fresh(run)
    # The statement read version 1 with the count, so the count is stored under version 1.
    assert (stored.claims_version, stored.cited_claims, stored.cited_claims_version) == (1, 2, 1)


def test_import_into_an_existing_run_invalidates_its_count(tmp_path):
    project = ProjectFactory(slug="imp")
    lines = [
        '{"question_id": "q1", "question": "Q1?", "run": "r", "answer": "X [P1]. Y.", '
        '"passages": [{"id": "P1", "source": "s", "text": "X."}]}',
        '{"question_id": "q2", "question": "Q2?", "run": "r", "answer": "Z [P1].", '
        '"passages": [{"id": "P1", "source": "s", "text": "Z."}]}',
    ]
    first = tmp_path / "one.jsonl"
    first.write_text(lines[0] + "\n")
    run_import(project=project, source=first)
    run = Run.objects.get(project=project, name="r")
    # q1 splits into "X [P1]." (cited) and "Y." (uncited).
    assert tallies.run_cited_claims(run=run) == 1
    both = tmp_path / "both.jsonl"
    both.write_text("\n".join(lines) + "\n")

    run_import(project=project, source=both)

    assert tallies.run_cited_claims(run=fresh(run)) == 2


def test_progress_counts_the_reviewers_labels_on_cited_claims_only(run):
    reviewer = ReviewerFactory(username="alice")
    claims = {c.index: c for c in run.answers.get().claims.all()}
    LabelFactory(claim=claims[1], reviewer=reviewer)
    LabelFactory(claim=claims[2], reviewer=reviewer, value="UNCITED")
    LabelFactory(claim=claims[3], reviewer=ReviewerFactory(username="bob"))

    progress = tallies.run_progress(run=run, reviewer=reviewer)

    # Cited: claims 1 and 3; alice labeled claim 1 (her UNCITED on claim 2 is not a cited claim).
    assert (progress.numerator, progress.denominator) == (1, 2)


def test_marking_a_claim_not_factual_takes_it_out_of_the_count(run):
    from labeling.review.citation_judgments import claim_set_factual

    tallies.run_cited_claims(run=run)
    c3 = run.answers.get().claims.get(index=3)

    claim_set_factual(claim=c3, factual=False)

    # Cited factual claims: claim 1 only (claim 3 is cited but no longer a factual claim).
    assert tallies.run_cited_claims(run=fresh(run)) == 1
    claim_set_factual(claim=c3, factual=True)
    assert tallies.run_cited_claims(run=fresh(run)) == 2
