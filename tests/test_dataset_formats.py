"""``import_dataset`` for ALCE's human evaluation, Liu et al. (2023) and HAGRID
(SPEC §6), on files written here in each dataset's documented format.

Why no real sample ships, and why no paper figure is reproduced:

- ALCE (MIT): ``human_eval/human_eval_citations_completed.json`` is over
  4 MiB and absent from the repository snapshot this project can fetch. Its
  paper's human citation recall/precision per model are over that file;
  the test below instead checks, on a written file, that Citelab's supported
  rate is ALCE's citation recall (``analyze.py``: the mean of the sentences'
  ``sentence_recall_score``) and says where the precision rules differ.
- Liu et al. (MIT): ``human_evaluation_annotations.jsonl`` is likewise over
  4 MiB and absent. The paper's citation recall (verification-worthy
  statements fully supported) is Citelab's supported rate over factual
  claims; checked below on a written file.
- HAGRID (Apache-2.0): the data lives on the Hugging Face hub
  (``miracl/hagrid``), not in the GitHub repository; no test may fetch it.
"""

from __future__ import annotations

import json

import pytest

from labeling.importers.datasets.load import dataset_import
from labeling.importers.records import ImportFailed
from labeling.models import CitationJudgment, Claim, Label, Passage, Project, Provenance, Run
from labeling.scores.metrics import run_judgments, run_scores
from tests.tables import row_counts

pytestmark = pytest.mark.django_db


@pytest.fixture
def project():
    return Project.objects.create(slug="ds", name="Datasets")


def labels_of(run: Run) -> list[tuple[str, int, str]]:
    return list(Label.objects.filter(claim__answer__run=run).order_by("claim__answer__question_key", "claim__index")
                .values_list("claim__answer__question_key", "claim__index", "value"))


def judgments_of(run: Run) -> list[tuple[int, str, str]]:
    return list(CitationJudgment.objects.filter(citation__claim__answer__run=run)
                .order_by("citation__claim__index", "citation__position")
                .values_list("citation__claim__index", "citation__cited_id", "judgment"))


# ---------------------------------------------------------------------- ALCE

def alce_item(sentences: list[tuple[str, int, list[int]]]) -> dict:
    """sentences: (text, sentence_recall_score, citation_precision_scores in marker order)."""
    return {"id": "q1", "question": "Who wrote the Iliad?", "output": " ".join(s for s, _r, _c in sentences),
            "sentences": [{"text": text, "sentence_recall_score": recall, "sentence_precision_score": recall,
                           "citations": [{"title": f"Doc {n}", "text": f"Text {n}.", "citation_precision_score": score}
                                         for n, score in zip([1, 2, 3], scores, strict=False)]}
                          for text, recall, scores in sentences],
            "automatic_recall_scores": [1] * len(sentences)}


def alce_file(tmp_path, model_items: dict[str, dict]) -> str:
    data = {"asqa": {name: {"q1": item, "overall_results": {"recall": 0.5}} for name, item in model_items.items()}}
    path = tmp_path / "human_eval_citations_completed.json"
    path.write_text(json.dumps(data, indent=2))
    return str(path)


def test_alce_sentences_scores_and_judgments(project, tmp_path):
    """Three sentences: s1 [1][2] recall 1, scores 2, 1; s2 [3] recall 0, score 0;
    s3 no marker. → SUPPORTED, UNSUPPORTED, UNCITED; judgments FULL, PARTIAL, NONE.
    Supported rate 1/3 = ALCE's citation recall (mean of recall scores 1, 0, 0).
    Citation precision (union): FULL on s1 precise, PARTIAL on supported s1 precise,
    NONE not → 2/3; ALCE's analyze.py: min(score, 1) if the sentence is supported →
    1, 1, 0 → 2/3 too (they differ only on a FULL citation of an unsupported sentence)."""
    item = alce_item([("Homer wrote it [1][2].", 1, [2, 1]), ("He was blind [3].", 0, [0]), ("Scholars agree.", 0, [])])
    _report, runs = dataset_import(project=project, format="alce",
                                   files=[alce_file(tmp_path, {"asqa-gpt-35-turbo-gtr-shot2-ndoc5-42-azure.json":
                                                               item})])
    run = runs["asqa-gpt-35-turbo-gtr-shot2-ndoc5-42-azure"]
    assert labels_of(run) == [("alce:asqa:q1", 1, "SUPPORTED"), ("alce:asqa:q1", 2, "UNSUPPORTED"),
                              ("alce:asqa:q1", 3, "UNCITED")]
    assert judgments_of(run) == [(1, "1", "FULL"), (1, "2", "PARTIAL"), (2, "3", "NONE")]
    assert list(Passage.objects.filter(answer__run=run).values_list("passage_id", "source", "text")) == [
        ("1", "Doc 1", "Text 1."), ("2", "Doc 2", "Text 2."), ("3", "Doc 1", "Text 1.")]
    rate = run_scores(run, with_gold=False).claims.supported_rate
    assert (rate.numerator, rate.denominator) == (1, 3)
    judged = run_judgments(run)
    assert (judged.precision.numerator, judged.precision.denominator) == (2, 3)
    assert Label.objects.get(claim__index=2).justification == (
        "ALCE sentence_recall_score: 0; sentence_precision_score: 0")
    assert Provenance.objects.get(run=run).licence == "MIT"


def test_alce_more_scores_than_markers_is_refused_by_line(project, tmp_path):
    item = alce_item([("Homer wrote it [1].", 1, [2, 1])])
    path = alce_file(tmp_path, {"m.json": item})
    line = next(n for n, text in enumerate(open(path).read().splitlines(), start=1) if '"q1": {' in text)
    before = row_counts()
    with pytest.raises(ImportFailed) as failure:
        dataset_import(project=project, format="alce", files=[path])
    assert [(i.file, i.line, i.field, i.reason) for i in failure.value.issues] == [
        ("human_eval_citations_completed.json", line, "asqa.m.json.q1.sentences[0].citations",
         "2 scored citations for 1 markers in the sentence: ALCE scores the markers in order")]
    assert line == 4
    assert row_counts() == before


# ----------------------------------------------------------------- Liu et al.

def liu_line(system: str = "bing_chat", **change) -> dict:
    complete, partial = "Citation Completely Supports Statement", "Citation Partially Supports Statement"
    line = {
        "id": f"abc123-{system}", "query": "Is coffee bad for you?", "split": "eli5_kilt", "system_name": system,
        "response": "Coffee is safe in moderation [1][2]. It has caffeine [2]. I hope this helps!",
        "citations": [{"text": "[1]", "start_index": 29, "end_index": 32, "link_target": "https://a.example/1"},
                      {"text": "[2]", "start_index": 32, "end_index": 35, "link_target": "https://b.example/2"},
                      {"text": "[2]", "start_index": 50, "end_index": 53, "link_target": "https://b.example/2"}],
        "statements_to_citation_texts": {"Coffee is safe in moderation [1][2].": ["[1]", "[2]"],
                                         "It has caffeine [2].": ["[2]"], "I hope this helps!": []},
        "annotation": {"fluency": "Agree", "perceived_utility": "Agree", "statement_to_annotation": {
            "Coffee is safe in moderation [1][2].": {
                "statement_is_verification_worthy": True, "statement_supported": "Yes",
                "citation_annotations": [
                    {"citation_text": "[1]", "citation_supports": complete, "evidence": "moderate intake is safe"},
                    {"citation_text": "[2]", "citation_supports": partial, "evidence": "coffee is safe"}]},
            "It has caffeine [2].": {
                "statement_is_verification_worthy": True, "statement_supported": "No",
                "citation_annotations": [{"citation_text": "[2]", "citation_supports": "Citation Inaccessible",
                                          "evidence": None}]},
            "I hope this helps!": {"statement_is_verification_worthy": False, "statement_supported": None,
                                   "citation_annotations": None}}},
    }
    line.update(change)
    return line


def write_lines(path, rows: list[dict]) -> str:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return str(path)


def test_liu_statements_worthiness_and_citation_support(project, tmp_path):
    """Statements: s1 Yes (FULL, PARTIAL), s2 No (UNJUDGEABLE), s3 not worthy → not factual.
    The paper's citation recall = worthy statements fully supported = 1/2 = Citelab's
    supported rate (the non-factual hedge leaves the denominator)."""
    path = write_lines(tmp_path / "human_evaluation_annotations.jsonl", [liu_line(), liu_line("perplexity")])
    _report, runs = dataset_import(project=project, format="verifiability", files=[path])
    assert sorted(runs) == ["bing_chat", "perplexity"]
    run = runs["bing_chat"]
    assert [(index, value) for _q, index, value in labels_of(run)] == [(1, "SUPPORTED"), (2, "UNSUPPORTED")]
    assert list(Claim.objects.filter(answer__run=run).values_list("index", "factual")) == [
        (1, True), (2, True), (3, False)]
    assert judgments_of(run) == [(1, "1", "FULL"), (1, "2", "PARTIAL"), (2, "2", "UNJUDGEABLE")]
    assert CitationJudgment.objects.filter(citation__claim__answer__run=run, judgment="FULL").get().evidence == (
        "moderate intake is safe")
    assert list(Passage.objects.filter(answer__run=run).values_list("passage_id", "source")) == [
        ("1", "https://a.example/1"), ("2", "https://b.example/2")]
    claims = run_scores(run, with_gold=False).claims
    assert (claims.supported_rate.numerator, claims.supported_rate.denominator, claims.claims) == (1, 2, 2)


def test_liu_an_unknown_support_value_names_line_and_statement(project, tmp_path):
    bad = liu_line()
    bad["annotation"]["statement_to_annotation"]["It has caffeine [2]."]["statement_supported"] = "Maybe"
    path = write_lines(tmp_path / "human_evaluation_annotations.jsonl", [liu_line("you"), bad])
    with pytest.raises(ImportFailed) as failure:
        dataset_import(project=project, format="liu2023", files=[path])
    assert [(i.line, i.field, i.reason) for i in failure.value.issues] == [
        (2, "annotation.statement_to_annotation['It has caffeine [2].'].statement_supported",
         "unknown value 'Maybe' (expected one of 'Yes', 'No', 'Citations Contradict Each Other', None)")]


# ----------------------------------------------------------------------- HAGRID

def hagrid_line(**change) -> dict:
    line = {"query_id": "42", "query": "What is a fjord?",
            "quotes": [{"idx": 1, "docid": "1234#0", "text": "A fjord is a long, narrow inlet."},
                       {"idx": 2, "docid": "1234#3", "text": "Fjords are carved by glaciers."}],
            "answers": [
                {"answer": "A fjord is a narrow inlet [1]. Glaciers carve them [2]. They are beautiful.",
                 "informative": 1, "attributable": 1,
                 "sentences": [{"text": "A fjord is a narrow inlet [1].", "index": 0, "informative": 1,
                                "attributable": 1},
                               {"text": "Glaciers carve them [2].", "index": 1, "informative": 1, "attributable": 0},
                               {"text": "They are beautiful.", "index": 2, "informative": 0, "attributable": None}]},
                {"answer": "A fjord is an inlet [1][2].", "informative": 1, "attributable": None,
                 "sentences": [{"text": "A fjord is an inlet [1][2].", "index": 0, "informative": 1,
                                "attributable": None}]}]}
    line.update(change)
    return line


def test_hagrid_answers_become_runs_and_sentences_claims(project, tmp_path):
    path = write_lines(tmp_path / "dev.jsonl", [hagrid_line()])
    _report, runs = dataset_import(project=project, format="hagrid", files=[path])
    assert sorted(runs) == ["hagrid-a1", "hagrid-a2"]
    assert labels_of(runs["hagrid-a1"]) == [("hagrid:42", 1, "SUPPORTED"), ("hagrid:42", 2, "UNSUPPORTED"),
                                            ("hagrid:42", 3, "UNCITED")]
    assert labels_of(runs["hagrid-a2"]) == []  # attributable null: not judged, pending
    assert Label.objects.get(claim__index=2).justification == "HAGRID attributable: 0; informative: 1"
    assert list(Passage.objects.filter(answer__run=runs["hagrid-a1"]).values_list("passage_id", "source")) == [
        ("1", "1234#0"), ("2", "1234#3")]
    assert Provenance.objects.get(run=runs["hagrid-a1"]).licence == "Apache-2.0"


def test_hagrid_a_bad_attributable_value_is_refused_and_nothing_written(project, tmp_path):
    bad = hagrid_line()
    bad["answers"][0]["sentences"][1]["attributable"] = "yes"
    path = write_lines(tmp_path / "dev.jsonl", [hagrid_line(query_id="41"), bad])
    before = row_counts()
    with pytest.raises(ImportFailed) as failure:
        dataset_import(project=project, format="hagrid", files=[path])
    assert [(i.file, i.line, i.field, i.reason) for i in failure.value.issues] == [
        ("dev.jsonl", 2, "answers[0].sentences[1].attributable", "unknown value 'yes' (expected one of 1, 0, None)")]
    assert row_counts() == before
