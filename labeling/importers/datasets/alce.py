"""ALCE human evaluation (Gao, Yen, Yu & Chen, EMNLP 2023):
``human_eval/human_eval_citations_completed.json`` → answers, no ORM.

The file is one JSON object: dataset (``asqa``, ``eli5``) → model output
file (``asqa-gpt-35-turbo-gtr-shot2-ndoc5-42-azure.json`` …) → question id →
the model's output with ``question``, ``output`` and ``sentences``: per
sentence ``text`` (with ``[n]`` markers), ``sentence_recall_score`` (1: the
cited documents fully support it), ``sentence_precision_score`` and
``citations``: per scored marker, in the order of the markers (at most
three), the document's ``title``, ``text`` and the annotator's
``citation_precision_score`` (2 fully, 1 partially, 0 does not support);
``overall_results`` entries are skipped. Fields as in the repository's
``human_eval/README.md`` and ``analyze.py``.

Mapping (SPEC §6):

- question id ``alce:<dataset>:<id>``; run = the output file's name without
  ``.json``; answer = ``output``;
- passages = the item's ``docs`` when it has them (id ``1``, ``2`` … as the
  markers count), else the documents the citations carry, by marker;
- claims = the sentences, citing their markers' ids;
- label, by one reviewer ``alce-annotator`` (the file names none):
  ``sentence_recall_score`` 1 → SUPPORTED, 0 → UNSUPPORTED, no marker →
  UNCITED; the two sentence scores as given are the justification;
- each scored citation's judgment (SPEC §4.3b): 2 → FULL, 1 → PARTIAL,
  0 → NONE.

Lost: the automatic scores, the utility ratings (another file), markers past
the three ALCE scored (cited, not judged). ALCE's citation precision counts
a citation as precise when its sentence is supported and its score is 1 or
2; Citelab's ``union`` rule also counts a FULL citation of an unsupported
sentence, so the two differ on exactly those citations.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from labeling.importers.content import max_rows, too_many_rows
from labeling.importers.datasets.common import (
    DatasetSource,
    Draft,
    Problems,
    SourceFile,
    choice,
    dict_field,
    file_issue,
    json_document,
    key_line,
    list_field,
    text_field,
)
from labeling.importers.markers import find_markers

SOURCE = DatasetSource(
    name="ALCE human evaluation (Gao, Yen, Yu & Chen, EMNLP 2023)",
    url="https://github.com/princeton-nlp/ALCE",
    commit="246c476a4edfc564266b7346b6e29ef4861ae937",
    licence="MIT",
    files="human_eval/human_eval_citations_completed.json",
    note=("Sentences are claims citing their markers; sentence_recall_score 1 → SUPPORTED, 0 → UNSUPPORTED, no "
          "marker → UNCITED, by one reviewer alce-annotator; citation_precision_score 2/1/0 → FULL/PARTIAL/NONE. "
          "Lost: automatic scores, markers past the three ALCE scored."),
)
DEFAULT_RUN = "alce"
DEFAULT_REVIEWER = "alce-annotator"
RECALL = {1: "SUPPORTED", 0: "UNSUPPORTED"}
PRECISION = {2: "FULL", 1: "PARTIAL", 0: "NONE"}


def drafts(files: list[SourceFile]) -> Iterator[Draft]:
    """One draft per (dataset, model output, question) of every file (module docstring)."""
    for source in files:
        yield from _file(source)


def _file(source: SourceFile) -> Iterator[Draft]:
    text, value, issue = json_document(source)
    if issue is not None:
        yield Draft(source.name, issue.line, None, None, [issue])
        return
    if not isinstance(value, dict):
        yield Draft(source.name, 1, None, None, [file_issue(source, "expected a JSON object: dataset → model → "
                                                                    "question id → output")])
        return
    count = 0
    for dataset, models in value.items():
        line, offset = key_line(text, dataset)
        if not isinstance(models, dict):
            problems = Problems(source.name, line)
            problems.add(dataset, f"must be an object of model outputs, got {type(models).__name__}")
            yield Draft(source.name, line, None, None, problems.issues)
            continue
        for model, items in models.items():
            line, model_offset = key_line(text, model, offset)
            run = model.removesuffix(".rerank").removesuffix(".json")
            if not isinstance(items, dict):
                problems = Problems(source.name, line)
                problems.add(f"{dataset}.{model}", f"must be an object of outputs, got {type(items).__name__}")
                yield Draft(source.name, line, None, None, problems.issues)
                continue
            for key, item in items.items():
                if key == "overall_results":
                    continue
                line, _offset = key_line(text, key, model_offset)
                count += 1
                if count > max_rows():
                    yield Draft(source.name, line, None, None, [file_issue(source, too_many_rows(line).reason,
                                                                           line=line)])
                    return
                problems = Problems(source.name, line)
                answer = _answer(dataset, key, item, f"{dataset}.{model}.{key}", problems)
                yield Draft(source.name, line, run, None if problems else answer, problems.issues)


def _answer(dataset: str, key: str, item: Any, where: str, problems: Problems) -> dict[str, Any]:
    item = dict_field(item, where, problems)
    question = text_field(item.get("question"), f"{where}.question", problems)
    output = text_field(item.get("output"), f"{where}.output", problems, required=False)
    passages: dict[str, dict[str, str]] = {}
    for k, doc in enumerate(list_field(item.get("docs"), f"{where}.docs", problems, required=False), start=1):
        doc = dict_field(doc, f"{where}.docs[{k - 1}]", problems)
        passages[str(k)] = {"id": str(k), "source": text_field(doc.get("title"), f"{where}.docs[{k - 1}].title",
                                                                problems, required=False),
                            "text": text_field(doc.get("text"), f"{where}.docs[{k - 1}].text", problems)}
    from_docs = bool(passages)
    claims = []
    for k, sentence in enumerate(list_field(item.get("sentences"), f"{where}.sentences", problems)):
        swhere = f"{where}.sentences[{k}]"
        sentence = dict_field(sentence, swhere, problems)
        text = text_field(sentence.get("text"), f"{swhere}.text", problems)
        markers, marker_problems = find_markers(text)
        for message in marker_problems:
            problems.add(f"{swhere}.text", message)
        occurrences = [cited for marker in markers for cited in marker.ids]
        scored = list_field(sentence.get("citations"), f"{swhere}.citations", problems, required=False)
        if len(scored) > len(occurrences):
            problems.add(f"{swhere}.citations", f"{len(scored)} scored citations for {len(occurrences)} markers in "
                                                "the sentence: ALCE scores the markers in order")
            scored = scored[:len(occurrences)]
        judged: dict[str, str] = {}
        for j, citation in enumerate(scored):
            cwhere = f"{swhere}.citations[{j}]"
            citation = dict_field(citation, cwhere, problems)
            cited = occurrences[j]
            if not from_docs and cited not in passages:
                passages[cited] = {"id": cited, "source": text_field(citation.get("title"), f"{cwhere}.title",
                                                                     problems, required=False),
                                   "text": text_field(citation.get("text"), f"{cwhere}.text", problems,
                                                      required=False)}
            judgment = choice(citation.get("citation_precision_score"), f"{cwhere}.citation_precision_score",
                              problems, PRECISION)
            if judgment is not None:
                judged.setdefault(cited, judgment)
        cited_ids = list(dict.fromkeys(occurrences))
        for cited in cited_ids:
            if not from_docs and cited not in passages:
                # A marker past the three scored: its document is not in the file.
                passages[cited] = {"id": cited, "source": "", "text": ""}
        recall = sentence.get("sentence_recall_score")
        label = choice(recall, f"{swhere}.sentence_recall_score", problems, RECALL) if cited_ids else "UNCITED"
        graded = (f"ALCE sentence_recall_score: {recall}; sentence_precision_score: "
                  f"{sentence.get('sentence_precision_score')}")
        claim: dict[str, Any] = {
            "text": text.strip(),
            "citations": [{"passage_id": cited, **({"judgment": judged[cited]} if cited in judged else {})}
                          for cited in cited_ids]}
        if label is not None:
            claim.update(label=label, justification=graded, reviewer=DEFAULT_REVIEWER)
        claims.append(claim)
    return {"question_id": f"alce:{dataset}:{key}", "question": question, "answer": output,
            "passages": sorted(passages.values(), key=lambda p: (len(p["id"]), p["id"])), "claims": claims}
