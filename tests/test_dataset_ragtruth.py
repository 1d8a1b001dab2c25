"""``import_dataset --format ragtruth`` (SPEC §6): responses with
hallucination spans → sentence claims citing the whole context, UNSUPPORTED
where a span falls in the sentence.

Real data: ``fixtures/datasets/ragtruth_readme_*.jsonl`` are the samples
printed in RAGTruth's README (MIT): response 1472 of mistral-7B-instruct and
the sources 11316 (its Summary), 14312 (QA) and 13661 (Data2txt). The QA and
Data2txt responses below are written here in the README's format.

Paper figures: RAGTruth (Wu et al., ACL 2024) prints, per model, how many of
its ~2,965 responses hold a hallucination and how many spans (README, "Data
Statistics"). Neither is a Citelab figure (Citelab counts claims, not
responses with one bad span), and ``dataset/response.jsonl`` is over 4 MiB,
absent from the repository snapshot this project can fetch: no test
reproduces them. The sample's own figure (5 of 6 sentences supported) is
checked by hand below.
"""

from __future__ import annotations

import json

import pytest

from labeling.importers.datasets.load import dataset_import
from labeling.importers.records import ImportFailed
from labeling.models import Claim, Label, Passage, Project, Provenance, Question, Run
from labeling.scores.metrics import run_scores
from tests.conftest import FIXTURES_DIR
from tests.tables import row_counts

pytestmark = pytest.mark.django_db

RESPONSES = FIXTURES_DIR / "datasets" / "ragtruth_readme_response.jsonl"
SOURCES = FIXTURES_DIR / "datasets" / "ragtruth_readme_source_info.jsonl"


@pytest.fixture
def project():
    return Project.objects.create(slug="rt", name="RAGTruth")


def labels_of(run: Run) -> list[tuple[int, str, str]]:
    return list(Label.objects.filter(claim__answer__run=run).order_by("claim__answer__question_key", "claim__index")
                .values_list("claim__index", "value", "justification"))


def write(path, rows: list[dict]) -> str:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return str(path)


def test_the_readme_sample_marks_the_sentence_holding_the_span(project):
    """Response 1472: 6 sentences; the span "Gaza Strip" (characters 219–229) is in
    sentence 2 → UNSUPPORTED; the other 5 SUPPORTED: support 5/6, coverage 6/6."""
    dataset_import(project=project, format="ragtruth", files=[RESPONSES, SOURCES])
    run = Run.objects.get(project=project, name="mistral-7B-instruct")
    assert [(index, value) for index, value, _j in labels_of(run)] == [
        (1, "SUPPORTED"), (2, "UNSUPPORTED"), (3, "SUPPORTED"), (4, "SUPPORTED"), (5, "SUPPORTED"), (6, "SUPPORTED")]
    assert labels_of(run)[1][2] == (
        "RAGTruth Evident Baseless Info: 'Gaza Strip'. HIGH INTRO OF NEW INFO It is not mentioned in the original "
        "source that Gaza Strip is included in the occupied Palestinian territory.")
    claims = run_scores(run, with_gold=False).claims
    assert (claims.claims, claims.cited, claims.labeled_cited, claims.supported) == (6, 6, 6, 5)
    assert Question.objects.get(question_id="ragtruth:11316").text == "Summarize the following news within 141 words:"
    # The Summary's article is the one passage every sentence cites.
    assert list(Passage.objects.filter(answer__run=run).values_list("passage_id", "source")) == [("1", "CNN/DM 11316")]
    assert Claim.objects.get(answer__run=run, index=2).citations.get().cited_id == "1"
    provenance = Provenance.objects.get(run=run)
    assert (provenance.licence, provenance.commit) == ("MIT", "c103204b9ce28d6bbad859304bf30de72b8ed8fe")


def test_qa_passages_and_a_span_over_two_sentences(project, tmp_path):
    """Source 14312 (QA, three passages). gpt-4-0613's response: a span over the end of
    sentence 1 and the start of sentence 2 marks both; sentence 3 is clean. An
    implicit_true span is still UNSUPPORTED (not in the context), flagged."""
    response = "Bake the beets for an hour. Add garlic to the greens. Season with salt."
    start = response.index("an hour")
    end = response.index(" to the greens")
    implicit = response.index("salt")
    write(tmp_path / "response.jsonl", [
        {"id": "9001", "source_id": "14312", "model": "gpt-4-0613", "temperature": 0.7, "split": "test",
         "quality": "good", "response": response,
         "labels": [{"start": start, "end": end, "text": response[start:end], "label_type": "Evident Conflict",
                     "meta": "45 to 60 minutes", "implicit_true": False, "due_to_null": False}]},
        {"id": "9002", "source_id": "14312", "model": "llama-2-7b-chat", "temperature": 0.7, "split": "test",
         "quality": "good", "response": response,
         "labels": [{"start": implicit, "end": implicit + 4, "text": "salt", "label_type": "Subtle Baseless Info",
                     "implicit_true": True}]},
    ])
    dataset_import(project=project, format="ragtruth", files=[tmp_path / "response.jsonl", SOURCES])
    gpt4 = Run.objects.get(project=project, name="gpt-4-0613")
    assert [(i, v) for i, v, _j in labels_of(gpt4)] == [(1, "UNSUPPORTED"), (2, "UNSUPPORTED"), (3, "SUPPORTED")]
    assert list(Passage.objects.filter(answer__run=gpt4).values_list("passage_id", flat=True)) == ["1", "2", "3"]
    assert [c.citations.count() for c in Claim.objects.filter(answer__run=gpt4)] == [3, 3, 3]
    llama = Run.objects.get(project=project, name="llama-2-7b-chat")
    assert labels_of(llama)[2] == (3, "UNSUPPORTED", "RAGTruth Subtle Baseless Info: 'salt' (implicit_true)")
    assert Question.objects.get(question_id="ragtruth:14312").text == "how to prepare beets and beet greens"


def test_reimporting_changes_nothing(project):
    dataset_import(project=project, format="ragtruth", files=[RESPONSES, SOURCES])
    before = {k: v for k, v in row_counts().items() if k != "labeling.AuditEvent"}
    report, _runs = dataset_import(project=project, format="ragtruth", files=[SOURCES, RESPONSES])
    assert (report.answers_created, report.answers_unchanged, report.labels_created) == (0, 1, 0)
    assert {k: v for k, v in row_counts().items() if k != "labeling.AuditEvent"} == before


@pytest.mark.parametrize(("label", "field", "reason"), [
    ({"start": 219, "end": 9999, "text": "Gaza Strip", "label_type": "Evident Baseless Info"}, "labels[0].end",
     "span 219–9999 is not inside the response (803 characters)"),
    ({"start": 219, "end": 229, "text": "West Bank", "label_type": "Evident Baseless Info"}, "labels[0].text",
     "'West Bank' is not the response's characters 219–229 ('Gaza Strip')"),
    ({"start": "219", "end": 229, "label_type": "Evident Baseless Info"}, "labels[0].start",
     "start and end must be whole numbers, got '219' and 229"),
    ({"start": 219, "end": 229}, "labels[0].label_type", "missing"),
])
def test_a_bad_span_names_file_line_and_field_and_nothing_is_written(project, tmp_path, label, field, reason):
    row = json.loads(RESPONSES.read_text())
    row["labels"] = [label]
    path = write(tmp_path / "response.jsonl", [{**row, "id": "1"}, row])
    before = row_counts()
    with pytest.raises(ImportFailed) as failure:
        dataset_import(project=project, format="ragtruth", files=[path, SOURCES])
    assert [(i.file, i.line, i.field, i.reason) for i in failure.value.issues] == [
        ("response.jsonl", 1, field, reason), ("response.jsonl", 2, field, reason)]
    assert row_counts() == before


def test_a_response_whose_source_is_missing_is_refused(project, tmp_path):
    row = json.loads(RESPONSES.read_text()) | {"source_id": "404"}
    path = write(tmp_path / "response.jsonl", [row])
    with pytest.raises(ImportFailed) as failure:
        dataset_import(project=project, format="ragtruth", files=[path, SOURCES])
    assert [(i.file, i.line, i.field, i.reason) for i in failure.value.issues] == [
        ("response.jsonl", 1, "source_id", "source '404' is in no source_info file given")]


def test_without_a_source_file_the_import_says_which_file_is_missing(project):
    with pytest.raises(ImportFailed) as failure:
        dataset_import(project=project, format="ragtruth", files=[RESPONSES])
    assert [str(i) for i in failure.value.issues] == [
        "ragtruth_readme_response.jsonl: line 1: (file): no sources file among the files given: "
        "dataset/response.jsonl and dataset/source_info.jsonl"]
