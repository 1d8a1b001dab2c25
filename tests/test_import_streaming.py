"""The answers import reads its file once, checking then writing batch by batch
(``labeling.importers.load``), through plain-row inserts (``labeling.importers.bulk``): a
bad line in a later batch still rolls back what earlier batches wrote, conflicts
are judged against the database as it was before the import, and every bad line
is reported once."""

from __future__ import annotations

import pytest
from django.db import connection, transaction

from labeling.importers import bulk
from labeling.importers import load as answers_import
from labeling.importers.load import run_import
from labeling.importers.records import ImportFailed
from labeling.models import Claim, Label, Question, Reviewer
from tests.factories import AnswerFactory, ClaimFactory, ProjectFactory, QuestionFactory, RunFactory
from tests.test_import_answers import answer_row, jsonl, table_counts

pytestmark = pytest.mark.django_db


@pytest.fixture
def one_answer_batches(monkeypatch):
    monkeypatch.setattr(answers_import, "BATCH_ANSWERS", 1)


def test_a_bad_line_in_a_later_batch_rolls_back_the_batches_written_before(one_answer_batches):
    project = ProjectFactory(slug="p")
    QuestionFactory(project=project, question_id="q3", text="Stored text?")
    before = table_counts()

    with pytest.raises(ImportFailed) as failure:
        run_import(project=project, source=jsonl(answer_row("q1"), answer_row("q2"), answer_row("q3")))

    # Lines 1 and 2 were written (one batch each) before line 3 was checked: all rolled back.
    assert [i.line for i in failure.value.issues] == [3]
    assert "is stored with the text 'Stored text?'" in failure.value.issues[0].reason
    assert table_counts() == before


def test_a_question_text_changed_across_batches_is_reported_once(one_answer_batches):
    project = ProjectFactory(slug="p")
    second = answer_row("q1", run="r2", question="Another text?")

    with pytest.raises(ImportFailed) as failure:
        run_import(project=project, source=jsonl(answer_row("q1"), second))

    # Line 1 wrote q1 before line 2 was checked; line 2 is compared with line 1 only,
    # not a second time with the q1 that line 1 stored.
    assert [(i.line, i.field) for i in failure.value.issues] == [(2, "question")]
    assert not Question.objects.exists()


def test_batched_import_writes_every_row_with_the_models_defaults(one_answer_batches):
    project = ProjectFactory(slug="p")
    first = answer_row("q1")
    first["claims"][0].update(label="SUPPORTED", reviewer="expert")

    report = run_import(project=project, source=jsonl(first, answer_row("q2")))

    assert (report.answers_created, report.claims_created, report.citations_created, report.labels_created) == (
        2, 4, 4, 1)
    claims = list(Claim.objects.order_by("answer__question_key", "index")
                  .values_list("answer__question_key", "index", "text", "start", "end", "revision", "factual"))
    # "It retries five times [P1]. It logs runs [P3]." : claim 1 is characters 0–27, claim 2 28–46.
    assert claims == [
        ("q1", 1, "It retries five times [P1].", 0, 27, 1, True), ("q1", 2, "It logs runs [P3].", 28, 46, 1, True),
        ("q2", 1, "It retries five times [P1].", 0, 27, 1, True), ("q2", 2, "It logs runs [P3].", 28, 46, 1, True),
    ]
    label = Label.objects.get()
    assert (label.value, label.reviewer.username, label.is_current, label.is_stale, label.claim_revision) == (
        "SUPPORTED", "expert", True, False, 1)
    assert label.created_at is not None and label.claim.citations.get().passage.passage_id == "P1"


def test_allocated_ids_are_never_ids_of_deleted_rows():
    """A label table version names claims by id: a new claim must not take the id of one deleted since."""
    answer = AnswerFactory(run=RunFactory(project=ProjectFactory(slug="p")))
    claims = [ClaimFactory(answer=answer, index=k) for k in (1, 2, 3)]
    top = claims[-1].pk
    claims[-1].delete()

    with transaction.atomic():
        ids = bulk.allocate_ids(Claim, 2)
        bulk.insert_rows(Claim, ["answer_id", "index", "text"], [(answer.pk, 3, "c"), (answer.pk, 4, "d")], ids=ids)

    assert min(ids) > top
    assert list(Claim.objects.filter(pk__in=ids).values_list("index", "revision", "factual")) == [(3, 1, True),
                                                                                                    (4, 1, True)]


def test_ids_taken_out_of_order_are_fetched_one_by_one():
    """PostgreSQL: ids come as one run of consecutive sequence values (only its
    ends are read). When another session takes values meanwhile, the run has
    holes; then fresh values are taken and read one by one. A sequence that
    steps by 3 has a hole after every value: every id must still be new,
    distinct, and the sequence's own."""
    if connection.vendor != "postgresql":
        claims = [ClaimFactory(index=k) for k in (1, 2)]
        with transaction.atomic():
            assert bulk.allocate_ids(Claim, 3) == [claims[-1].pk + 1, claims[-1].pk + 2, claims[-1].pk + 3]
        return
    answer = AnswerFactory(run=RunFactory(project=ProjectFactory(slug="p")))
    top = ClaimFactory(answer=answer, index=1).pk
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_get_serial_sequence('labeling_claim', 'id')")
        sequence = cursor.fetchone()[0]
        cursor.execute(f"ALTER SEQUENCE {sequence} INCREMENT BY 3")
    try:
        with transaction.atomic():
            ids = bulk.allocate_ids(Claim, 4)
            bulk.insert_rows(Claim, ["answer_id", "index", "text"], [(answer.pk, k, "c") for k in (2, 3, 4, 5)],
                             ids=ids)
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f"ALTER SEQUENCE {sequence} INCREMENT BY 1")
    # The first 4 values (top+3 … top+12) were taken as a run with holes and left unused; the next 4 are the ids.
    assert ids == [top + 15, top + 18, top + 21, top + 24]
    assert sorted(Claim.objects.filter(answer=answer).values_list("pk", flat=True)) == [top, *ids]


@pytest.mark.django_db(transaction=True)
def test_ids_are_only_allocated_inside_a_transaction():
    with pytest.raises(RuntimeError, match="inside transaction.atomic"):
        bulk.allocate_ids(Reviewer, 1)


def test_a_left_out_column_without_default_is_refused():
    with transaction.atomic(), pytest.raises(ValueError, match="Claim.answer_id has no default"):
        bulk.insert_rows(Claim, ["index", "text"], [(1, "x")])
