"""``import_dataset --format lfqa-verification`` (alias ``salad``; SPEC §6):
three labels per answer sentence become three reviewers.

The repository (timchen0618/LFQA-Verification) states no licence, so no
sample of it ships: the files below are written here in its format
(``data/annotations/annotations-<system>.json``, ``data/docs/docs-webgpt.json``).

Paper figures: Chen et al. (2023) print the share of supported sentences per
system and the annotators' agreement, over 100 questions per system. With no
licence to ship the data, no test reproduces them; run on the repository's
own ``annotations-webgpt.json`` (not shipped), the import gives 653
sentences, 1,959 labels and Krippendorff's alpha 0.45 across the three label
positions (README, "Public datasets"). What the tests check: the mapping, and
that the agreement Citelab computes over the imported annotators is the
``krippendorff`` package's on the same labels.
"""

from __future__ import annotations

import json

import krippendorff
import numpy as np
import pytest

from labeling.importers.datasets.load import dataset_import
from labeling.importers.records import ImportFailed
from labeling.models import Label, Passage, Project, ReviewerKind, Run
from labeling.team.agreement import run_agreement
from tests.tables import row_counts

pytestmark = pytest.mark.django_db

DOCS = [{"question_id": 7, "question": "Why is the sky blue?",
         "docs": [{"doc_id": "webgpt:0", "title": "Rayleigh scattering (en.wikipedia.org)",
                   "text": "Shorter wavelengths are scattered more strongly by air molecules."},
                  {"doc_id": "webgpt:1", "title": "Sky colour (example.org)", "text": "Blue light scatters most."}]},
        {"question_id": 8, "question": "Why do cats purr?",
         "docs": [{"doc_id": "webgpt:0", "title": "Purring (example.org)", "text": "Cats purr when content."}]}]
SKY = ["Air scatters blue light more than red.", "This makes the sky look blue.", "Sunsets are green."]
CATS = ["Cats purr when they are content.", "They also purr when hurt."]
LABELS = {7: [["supported", "supported", "supported"], ["supported", "partially", "supported"],
              ["not_supported", "not_supported", "partially"]],
          8: [["supported", "supported", "not_supported"], ["not_supported", "partially", "not_supported"]]}


def annotations(questions: dict[int, list[str]] | None = None) -> list[dict]:
    questions = questions or {7: SKY, 8: CATS}
    texts = {7: "Why is the sky blue?", 8: "Why do cats purr?"}
    return [{"question_id": qid, "question": texts[qid], "answers": sentences,
             "annotations": [{"labels": labels, "answer": sentence}
                             for labels, sentence in zip(LABELS[qid], sentences, strict=True)]}
            for qid, sentences in questions.items()]


def files(tmp_path, rows: list[dict] | None = None, name: str = "annotations-gpt3_wdoc.json"):
    (tmp_path / name).write_text(json.dumps(rows if rows is not None else annotations(), indent=1))
    (tmp_path / "docs-webgpt.json").write_text(json.dumps(DOCS, indent=1))
    return [tmp_path / name, tmp_path / "docs-webgpt.json"]


@pytest.fixture
def project():
    return Project.objects.create(slug="lfqa", name="LFQA")


def test_three_labels_per_sentence_are_three_reviewers(project, tmp_path):
    """5 sentences × 3 labels = 15 labels; partially and not_supported → UNSUPPORTED."""
    report, runs = dataset_import(project=project, format="salad", files=files(tmp_path))
    assert list(runs) == ["gpt3_wdoc"]
    assert report.labels_created == 15
    run = runs["gpt3_wdoc"]
    rows = list(Label.objects.filter(claim__answer__run=run).order_by(
        "claim__answer__question_key", "claim__index", "reviewer__username").values_list(
        "claim__answer__question_key", "claim__index", "reviewer__username", "value", "justification"))
    assert rows[3:6] == [("lfqa:7", 2, "lfqa-annotator-1", "SUPPORTED", "LFQA-Verification label: supported"),
                         ("lfqa:7", 2, "lfqa-annotator-2", "UNSUPPORTED", "LFQA-Verification label: partially"),
                         ("lfqa:7", 2, "lfqa-annotator-3", "SUPPORTED", "LFQA-Verification label: supported")]
    assert {label.reviewer.kind for label in Label.objects.select_related("reviewer")} == {ReviewerKind.EXTERNAL}
    # Every sentence cites the question's documents: the annotators judged against the set.
    assert list(Passage.objects.filter(answer__question__question_id="lfqa:7").values_list("passage_id", "source")) \
        == [("webgpt:0", "Rayleigh scattering (en.wikipedia.org)"), ("webgpt:1", "Sky colour (example.org)")]
    assert run.answers.get(question_key="lfqa:7").claims.get(index=3).citations.count() == 2


def test_the_agreement_over_the_three_positions_is_krippendorffs(project, tmp_path):
    """Reliability matrix (positions × sentences, 1 = SUPPORTED, 2 = UNSUPPORTED):
    s1 1 1 1, s2 1 2 1, s3 2 2 2, c1 1 1 2, c2 2 2 2 → alpha from the package."""
    _report, runs = dataset_import(project=project, format="lfqa-verification", files=files(tmp_path))
    result = run_agreement(run=runs["gpt3_wdoc"])
    value = {"supported": 1.0, "partially": 2.0, "not_supported": 2.0}
    # Sentences in the order the claims are listed (question 7, then 8).
    columns = [labels for qid in (7, 8) for labels in LABELS[qid]]
    matrix = np.array([[value[column[k]] for column in columns] for k in range(3)])
    assert result.overall.alpha.value == pytest.approx(krippendorff.alpha(matrix, level_of_measurement="nominal"),
                                                       abs=1e-12)
    assert result.overall.alpha.n == 5


def test_the_run_is_named_by_the_file_or_by_run(project, tmp_path):
    paths = files(tmp_path, name="my-answers.json")
    _report, runs = dataset_import(project=project, format="salad", files=paths)
    assert list(runs) == ["lfqa"]
    _report, runs = dataset_import(project=project, format="salad", files=paths, run_name="alpaca")
    assert list(runs) == ["alpaca"]
    assert set(Run.objects.filter(project=project).values_list("name", flat=True)) == {"lfqa", "alpaca"}


@pytest.mark.parametrize(("change", "field", "reason"), [
    (lambda rows: rows[1]["annotations"][0].update(labels=["supported", "maybe", "supported"]),
     "annotations[0].labels[1]", "unknown value 'maybe' (expected one of 'supported', 'partially', 'not_supported')"),
    (lambda rows: rows[1]["annotations"].pop(), "annotations", "1 annotations for 2 sentences in answers"),
    (lambda rows: rows[1].update(question_id=99), "question_id",
     "question 99 has no documents in the docs file given"),
    (lambda rows: rows[1]["annotations"][1].update(answer="Another sentence."), "annotations[1].answer",
     "is not sentence 2 of answers ('They also purr when hurt.')"),
])
def test_a_bad_record_names_file_line_and_field_and_nothing_is_written(project, tmp_path, change, field, reason):
    """The second question's record starts on line 37 of the file (json.dumps, indent=1)."""
    rows = annotations()
    change(rows)
    paths = files(tmp_path, rows)
    start = [n for n, line in enumerate(paths[0].read_text().splitlines(), start=1) if line == " {"][1]
    before = row_counts()
    with pytest.raises(ImportFailed) as failure:
        dataset_import(project=project, format="salad", files=paths)
    assert [(i.file, i.line, i.field, i.reason) for i in failure.value.issues] == [
        ("annotations-gpt3_wdoc.json", start, field, reason)]
    assert start == 37
    assert row_counts() == before


def test_without_a_docs_file_the_import_says_so(project, tmp_path):
    paths = files(tmp_path)
    with pytest.raises(ImportFailed) as failure:
        dataset_import(project=project, format="salad", files=paths[:1])
    assert [str(i) for i in failure.value.issues] == [
        "annotations-gpt3_wdoc.json: line 1: (file): no docs file among the files given: "
        "data/annotations/annotations-<system>.json and data/docs/docs-webgpt.json"]
