"""LFQA-Verification, the sentence attribution annotations of "Understanding
Retrieval Augmentation for Long-Form Question Answering" (Chen, Xu, Arora &
Choi, 2023; asked for as SALAD in SPEC §6): ``data/annotations/
annotations-<system>.json`` with the evidence documents
``data/docs/docs-<source>.json`` → answers, no ORM.

An annotations file is a JSON list: per question ``question_id``,
``question``, ``answers`` (the answer's sentences) and ``annotations``: per
sentence ``{"answer": sentence, "labels": [three labels]}``, each label
``supported``, ``partially`` or ``not_supported``. A docs file is a JSON
list: per question ``question_id``, ``question``, ``docs`` (``doc_id``,
``title``, ``text``). The repository judges every system's sentences against
``docs-webgpt.json`` (``src/Automatic/input_file.json``). Files are told
apart by content, in any order; several annotations files may be given.

Mapping (SPEC §6):

- question id ``lfqa:<question_id>``; run = the system named by the file
  (``annotations-gpt3_wdoc.json`` → ``gpt3_wdoc``); answer = its sentences
  joined by spaces;
- passages = the question's documents (id = ``doc_id``, source = title);
- claims = the sentences, each citing every document: the annotators judged
  a sentence against the document set, not against markers;
- labels: the three labels of a sentence are three reviewers,
  ``lfqa-annotator-1`` … ``-3`` by their position in the list (the dataset
  does not name its annotators, so position k on two sentences need not be
  the same person: agreement figures across them are those of three label
  slots, as the paper's own agreement is); ``supported`` → SUPPORTED,
  ``partially`` and ``not_supported`` → UNSUPPORTED (SPEC §3: partial
  support is UNSUPPORTED); the label as given is the justification
  (``LFQA-Verification label: partially``).

Lost: which document supports a sentence (every sentence cites them all),
who the annotators are, and the difference between ``partially`` and
``not_supported`` except in the justification.
"""

from __future__ import annotations

import re
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
    item_lines,
    json_document,
    list_field,
    text_field,
)

SOURCE = DatasetSource(
    name="LFQA-Verification (Chen, Xu, Arora & Choi, 2023)",
    url="https://github.com/timchen0618/LFQA-Verification",
    commit="4e905be93fbe919082d62faa77ee32c68e90237c",
    licence="none stated (the repository has no licence file)",
    files="data/annotations/annotations-<system>.json and data/docs/docs-webgpt.json",
    note=("Each sentence is a claim citing every evidence document of its question; its three labels are the "
          "reviewers lfqa-annotator-1..3 (positions in the list, not named people); supported → SUPPORTED, "
          "partially and not_supported → UNSUPPORTED, the label as given in the justification. Lost: which "
          "document supports a sentence, who the annotators are."),
)
DEFAULT_RUN = "lfqa"
LABELS = {"supported": "SUPPORTED", "partially": "UNSUPPORTED", "not_supported": "UNSUPPORTED"}
_SYSTEM = re.compile(r"^annotations-(.+?)\.json$")


def drafts(files: list[SourceFile]) -> Iterator[Draft]:
    """One draft per question of every annotations file (module docstring)."""
    documents: dict[str, list[dict[str, str]]] = {}
    annotations: list[tuple[SourceFile, str, list[tuple[int, Any]]]] = []
    failed = False
    for source in files:
        text, value, issue = json_document(source)
        if issue is not None:
            failed = True
            yield Draft(source.name, issue.line, None, None, [issue])
            continue
        if not isinstance(value, list) or not value or not isinstance(value[0], dict):
            failed = True
            yield Draft(source.name, 1, None, None, [file_issue(source, "expected a JSON list of questions (an "
                                                                        "annotations or a docs file)")])
            continue
        items = list(zip(item_lines(text), value, strict=True))
        if len(items) > max_rows():
            failed = True
            yield Draft(source.name, items[max_rows()][0], None, None, [_named(source, too_many_rows(
                items[max_rows()][0]))])
            continue
        if "docs" in value[0]:
            for line, item in items:
                problems = Problems(source.name, line)
                key, docs = _documents(item, problems)
                if problems:
                    failed = True
                    yield Draft(source.name, line, None, None, problems.issues)
                elif key in documents:
                    failed = True
                    problems.add("question_id", f"question {key} has documents twice")
                    yield Draft(source.name, line, None, None, problems.issues)
                else:
                    documents[key] = docs
        elif "annotations" in value[0]:
            match = _SYSTEM.match(source.name)
            annotations.append((source, match.group(1) if match else None, items))
        else:
            failed = True
            yield Draft(source.name, 1, None, None, [file_issue(source, "neither an annotations file (no "
                                                                        "'annotations') nor a docs file (no 'docs')")])
    if not annotations or not documents:
        if not failed:
            first = files[0]
            missing = "annotations" if not annotations else "docs"
            yield Draft(first.name, 1, None, None, [file_issue(first, f"no {missing} file among the files given: "
                                                                      f"{SOURCE.files}")])
        return
    for source, system, items in annotations:
        for line, item in items:
            problems = Problems(source.name, line)
            answer = _answer(item, documents, problems)
            yield Draft(source.name, line, system, None if problems else answer, problems.issues)


def _documents(item: Any, problems: Problems) -> tuple[str, list[dict[str, str]]]:
    item = dict_field(item, "(item)", problems)
    key = text_field(item.get("question_id"), "question_id", problems)
    docs = []
    for k, doc in enumerate(list_field(item.get("docs"), "docs", problems)):
        doc = dict_field(doc, f"docs[{k}]", problems)
        docs.append({"id": text_field(doc.get("doc_id"), f"docs[{k}].doc_id", problems),
                     "source": text_field(doc.get("title"), f"docs[{k}].title", problems, required=False),
                     "text": text_field(doc.get("text"), f"docs[{k}].text", problems)})
    if not docs and not problems:
        problems.add("docs", "empty: a sentence is judged against its question's documents")
    return key, docs


def _answer(item: Any, documents: dict[str, list[dict[str, str]]], problems: Problems) -> dict[str, Any]:
    item = dict_field(item, "(item)", problems)
    key = text_field(item.get("question_id"), "question_id", problems)
    question = text_field(item.get("question"), "question", problems)
    sentences = list_field(item.get("answers"), "answers", problems)
    annotated = list_field(item.get("annotations"), "annotations", problems)
    if problems:
        return {}
    docs = documents.get(key)
    if docs is None:
        problems.add("question_id", f"question {key} has no documents in the docs file given")
        return {}
    if len(annotated) != len(sentences):
        problems.add("annotations", f"{len(annotated)} annotations for {len(sentences)} sentences in answers")
        return {}
    claims = []
    for k, (sentence, annotation) in enumerate(zip(sentences, annotated, strict=True)):
        where = f"annotations[{k}]"
        text = text_field(sentence, f"answers[{k}]", problems)
        annotation = dict_field(annotation, where, problems)
        if annotation.get("answer") is not None and annotation.get("answer") != sentence:
            problems.add(f"{where}.answer", f"is not sentence {k + 1} of answers ({str(sentence)[:60]!r})")
        labels = []
        for n, value in enumerate(list_field(annotation.get("labels"), f"{where}.labels", problems), start=1):
            label = choice(value, f"{where}.labels[{n - 1}]", problems, LABELS)
            if label is not None:
                labels.append({"reviewer": f"lfqa-annotator-{n}", "label": label,
                               "justification": f"LFQA-Verification label: {value}"})
        claims.append({"text": text.strip(), "citations": [{"passage_id": doc["id"]} for doc in docs],
                       "labels": labels})
    return {"question_id": f"lfqa:{key}", "question": question,
            "answer": " ".join(str(s).strip() for s in sentences), "passages": docs, "claims": claims}


def _named(source: SourceFile, issue) -> Any:
    return file_issue(source, issue.reason, line=issue.line)
