"""RAGTruth (Wu et al., ACL 2024): ``dataset/response.jsonl`` and
``dataset/source_info.jsonl`` → answers, no ORM.

``response.jsonl``: one LLM response per line (``id``, ``source_id``,
``model``, ``response``, ``labels``: the annotated hallucination spans with
``start``/``end`` character offsets, ``text``, ``label_type`` such as
"Evident Baseless Info", ``meta``, ``implicit_true``, ``due_to_null``).
``source_info.jsonl``: the context of each ``source_id`` (``task_type`` QA,
Summary or Data2txt; ``source_info``: for QA ``{"question", "passages"}``
with ``passage N:`` parts, for Summary the article text, for Data2txt a JSON
object; ``prompt``). The two files are told apart by their content, in any
order. Fields as in the repository's README.

Mapping (SPEC §6):

- question id ``ragtruth:<source_id>``; question = the QA question, else the
  prompt's first line (the instruction); run = ``model``;
- passages = the context: each ``passage N:`` of a QA source (id ``N``), the
  article of a Summary (id ``1``), the Data2txt object as JSON (id ``1``);
- claims = the response's sentences (``sentencex``), each citing every
  passage: RAGTruth judges a response against its whole context and has no
  citation markers;
- label, by one reviewer ``ragtruth-annotator`` (the dataset does not say
  which annotator marked which span): UNSUPPORTED when a hallucination span
  overlaps the sentence, else SUPPORTED; the justification keeps each span's
  ``label_type``, text, ``implicit_true``/``due_to_null`` and ``meta``.

Lost: the spans' character offsets (a span becomes its sentence: one span
over two sentences marks both; a sentence with a three-word span is as
UNSUPPORTED as one made up entirely), which annotator marked it, the
response's ``quality``, ``temperature`` and ``split``. An ``implicit_true``
span (true, but not in the context) is still UNSUPPORTED: the context does
not entail it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from labeling.importers.datasets.common import (
    DatasetSource,
    Draft,
    Problems,
    SourceFile,
    dict_field,
    file_issue,
    json_lines,
    list_field,
    text_field,
)
from labeling.importers.markers import split_claims

SOURCE = DatasetSource(
    name="RAGTruth (Wu et al., ACL 2024)",
    url="https://github.com/ParticleMedia/RAGTruth",
    commit="c103204b9ce28d6bbad859304bf30de72b8ed8fe",
    licence="MIT",
    files="dataset/response.jsonl and dataset/source_info.jsonl",
    note=("Claims are the response's sentences, each citing the whole context (RAGTruth has no citation markers); "
          "a sentence that a hallucination span overlaps is UNSUPPORTED, any other SUPPORTED, by one reviewer "
          "ragtruth-annotator. Lost: the spans' offsets (kept as text in the justification), who marked them, "
          "quality, temperature and split."),
)
DEFAULT_RUN = "ragtruth"
DEFAULT_REVIEWER = "ragtruth-annotator"
_PASSAGE = re.compile(r"passage (\d+):", re.IGNORECASE)


def drafts(files: list[SourceFile]) -> Iterator[Draft]:
    """One draft per response (module docstring). Needs one responses file
    and one source file; the sources are read first, whatever the order."""
    responses: list[tuple[SourceFile, int, dict[str, Any]]] = []
    sources: dict[str, tuple[SourceFile, int, dict[str, Any]]] = {}
    kinds: dict[str, list[str]] = {"responses": [], "sources": []}
    failed = False
    for source in files:
        kind = None
        for number, value, issue in json_lines(source):
            if issue is not None:
                failed = True
                yield Draft(source.name, number, None, None, [issue])
                continue
            if not isinstance(value, dict):
                failed = True
                yield Draft(source.name, number, None, None, [file_issue(source, "expected a JSON object",
                                                                         line=number, field="(line)")])
                continue
            kind = kind or ("responses" if "response" in value else "sources" if "source_info" in value else None)
            if kind is None:
                failed = True
                yield Draft(source.name, number, None, None, [file_issue(
                    source, "neither a response (no 'response' key) nor a source (no 'source_info' key): give "
                            "dataset/response.jsonl and dataset/source_info.jsonl", line=number, field="(line)")])
                break
            if kind == "responses":
                responses.append((source, number, value))
            else:
                problems = Problems(source.name, number)
                key = text_field(value.get("source_id"), "source_id", problems)
                if key in sources and not problems:
                    other = sources[key]
                    problems.add("source_id", f"source {key!r} is also on line {other[1]} of {other[0].name}")
                if problems:
                    failed = True
                    yield Draft(source.name, number, None, None, problems.issues)
                    continue
                sources[key] = (source, number, value)
        if kind is not None:
            kinds[kind].append(source.name)
    missing = [name for name, found in kinds.items() if not found]
    if missing and not failed:
        first = files[0]
        yield Draft(first.name, 1, None, None, [file_issue(first, f"no {' and no '.join(missing)} file among "
                                                                  f"the files given: {SOURCE.files}")])
        return
    for source, number, value in responses:
        problems = Problems(source.name, number)
        answer = _answer(value, sources, problems)
        model = value.get("model") if isinstance(value.get("model"), str) else None
        yield Draft(source.name, number, model, None if problems else answer, problems.issues)


def _answer(value: dict[str, Any], sources: dict[str, tuple[SourceFile, int, dict[str, Any]]],
            problems: Problems) -> dict[str, Any]:
    source_id = text_field(value.get("source_id"), "source_id", problems)
    text_field(value.get("model"), "model", problems)
    response = text_field(value.get("response"), "response", problems, required=False)
    spans = _spans(list_field(value.get("labels"), "labels", problems, required=False), response, problems)
    context = sources.get(source_id)
    if context is None:
        if source_id:
            problems.add("source_id", f"source {source_id!r} is in no source_info file given")
        return {}
    source_file, source_line, info = context
    where = Problems(source_file.name, source_line)
    question, passages = _context(info, where)
    problems.issues.extend(where.issues)
    claims = []
    sentences, _marker_problems = split_claims(response)
    for sentence in sentences:
        hits = [span for span in spans if span["start"] < sentence.end and sentence.start < span["end"]]
        claim: dict[str, Any] = {"text": sentence.text, "citations": [{"passage_id": p["id"]} for p in passages],
                                 "label": "UNSUPPORTED" if hits else "SUPPORTED", "reviewer": DEFAULT_REVIEWER}
        if hits:
            claim["justification"] = " | ".join(_said(span) for span in hits)
        claims.append(claim)
    return {"question_id": f"ragtruth:{source_id}", "question": question, "answer": response,
            "passages": passages, "claims": claims}


def _spans(labels: list, response: str, problems: Problems) -> list[dict[str, Any]]:
    """The hallucination spans, each checked against the response it marks."""
    spans = []
    for k, raw in enumerate(labels):
        where = f"labels[{k}]"
        raw = dict_field(raw, where, problems)
        start, end = raw.get("start"), raw.get("end")
        if not all(isinstance(x, int) and not isinstance(x, bool) for x in (start, end)):
            problems.add(f"{where}.start", f"start and end must be whole numbers, got {start!r} and {end!r}")
            continue
        if not 0 <= start < end <= len(response):
            problems.add(f"{where}.end", f"span {start}–{end} is not inside the response ({len(response)} "
                                         "characters)")
            continue
        text = raw.get("text")
        if isinstance(text, str) and text and response[start:end] != text:
            problems.add(f"{where}.text", f"{text[:60]!r} is not the response's characters {start}–{end} "
                                          f"({response[start:end][:60]!r})")
            continue
        label_type = text_field(raw.get("label_type"), f"{where}.label_type", problems)
        spans.append({"start": start, "end": end, "text": response[start:end], "label_type": label_type,
                      "meta": raw.get("meta") if isinstance(raw.get("meta"), str) else "",
                      "implicit_true": raw.get("implicit_true") is True, "due_to_null": raw.get("due_to_null") is True})
    return spans


def _said(span: dict[str, Any]) -> str:
    """The span as the annotator gave it: type, text, flags, comment."""
    flags = [name for name in ("implicit_true", "due_to_null") if span[name]]
    text = f"RAGTruth {span['label_type']}: {span['text']!r}"
    if flags:
        text += f" ({', '.join(flags)})"
    meta = " ".join(span["meta"].split())
    return f"{text}. {meta}" if meta else text


def _context(info: dict[str, Any], problems: Problems) -> tuple[str, list[dict[str, str]]]:
    """``(question, passages)`` of one source line (module docstring)."""
    task = text_field(info.get("task_type"), "task_type", problems)
    name = info.get("source") if isinstance(info.get("source"), str) else "RAGTruth"
    source = f"{name} {info.get('source_id')}"
    content = info.get("source_info")
    prompt = info.get("prompt") if isinstance(info.get("prompt"), str) else ""
    instruction = next((line.strip() for line in prompt.splitlines() if line.strip()), "")
    if task == "QA":
        content = dict_field(content, "source_info", problems)
        question = text_field(content.get("question"), "source_info.question", problems)
        text = text_field(content.get("passages"), "source_info.passages", problems)
        parts = _PASSAGE.split(text)
        passages = [{"id": parts[k], "source": source, "text": parts[k + 1].strip()} for k in range(1, len(parts), 2)]
        if not passages and text.strip():
            passages = [{"id": "1", "source": source, "text": text.strip()}]
        if not passages and text:
            problems.add("source_info.passages", "blank: a response is judged against its passages")
        return question, passages
    if task not in ("Summary", "Data2txt"):
        if task:
            problems.add("task_type", f"unknown task type {task!r} (expected QA, Summary or Data2txt)")
        return "", []
    if not instruction:
        problems.add("prompt", "missing: the question of a Summary or Data2txt source is its prompt's first line")
    if isinstance(content, str):
        text = content
    elif isinstance(content, dict):
        text = json.dumps(content, ensure_ascii=False, indent=1)
    else:
        problems.add("source_info", f"must be text or an object, got {type(content).__name__}")
        return instruction, []
    if not text.strip():
        problems.add("source_info", "blank: a response is judged against its source")
    return instruction, [{"id": "1", "source": source, "text": text}]
