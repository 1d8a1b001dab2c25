"""Traces from tracing tools → answers, shared by every format (SPEC §6):
a format reads its export into :class:`Span` records; :func:`answers` groups
them by trace and makes one answers-file object per trace. No ORM.

Per trace (SPEC §6 answers file, claims split from the text):

- **passages**: the documents of its retrieval spans, in the order the spans
  started, numbered 1, 2, … (the numbers an answer's ``[1]`` markers use);
  source = the document's metadata ``source``/``url``/``file_name``/
  ``file_path``/``title``, else its id;
- **answer**: the output text of its last LLM span (by start time);
- **question**: the input text of its root span, else of its first
  retrieval span, else the last user message of its LLM span;
- **question id**: the root span's metadata ``question_id`` when given (so
  two runs' traces of one question meet), else the trace id; the trace id is
  the answer's ``external_id`` either way;
- claims: the answer's sentences with their markers as citations (the
  answers importer splits them).

A span that does not fit is reported with its id and why, and left out: a
retrieval span without documents, a trace with no LLM output to review
(then the whole trace), an LLM span whose output holds no text.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from labeling.importers.datasets.common import (
    Problems,
    SourceFile,
    file_issue,
    item_lines,
    json_document,
    json_lines,
    text_of,
)
from labeling.importers.records import ImportIssue

RETRIEVER, LLM = "retriever", "llm"
_SOURCE_KEYS = ("source", "url", "file_name", "file_path", "title", "document_id")
_TEXT_KEYS = ("content", "text", "answer", "output", "result", "value", "response", "completion")
_QUESTION_KEYS = ("question", "query", "input", "user_input", "prompt", "text", "content")


@dataclass
class Span:
    """One span (observation, run) of a trace, as every format reads it.
    ``kind``: ``retriever``, ``llm`` or another kind (kept for the tree);
    ``documents``: ``[{"id", "source", "text"}]`` of a retrieval span;
    ``output``: its output text (LLM spans; root spans), ``input`` its input
    text; ``start`` a sortable time text; ``line`` where it is in the file."""

    id: str
    trace_id: str
    parent_id: str | None
    kind: str
    line: int
    name: str = ""
    start: str = ""
    input: str | None = None
    output: str | None = None
    documents: list[dict[str, str]] | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Unfit:
    """A span (or a whole trace) left out, and why."""

    span_id: str
    trace_id: str
    reason: str

    def __str__(self) -> str:
        return f"span {self.span_id} (trace {self.trace_id}): {self.reason}"


def records(source: SourceFile) -> Iterator[tuple[int, Any, ImportIssue | None]]:
    """``(line, object, None)`` per record of a trace export: a JSON array
    (each element), a JSON object (one record) or JSON Lines; ``(line,
    None, issue)`` for what cannot be read."""
    text, issue = text_of(source, format="json")
    if issue is not None:
        yield issue.line, None, issue
        return
    stripped = text.lstrip()
    if stripped.startswith("[") or (stripped.startswith("{") and _one_document(text)):
        text, value, issue = json_document(source)
        if issue is not None:
            yield issue.line, None, issue
            return
        if isinstance(value, list):
            yield from ((line, item, None) for line, item in zip(item_lines(text), value, strict=True))
        else:
            yield 1, value, None
        return
    yield from json_lines(source)


def _one_document(text: str) -> bool:
    """A JSON object over several lines is one document, not JSON Lines."""
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def answers(spans: Iterable[Span], *, file: str) -> tuple[list[tuple[int, dict[str, Any]]], list[Unfit],
                                                         list[ImportIssue]]:
    """One answers-file object per trace with its first line, the spans left
    out, and the problems of the traces (module docstring)."""
    traces: dict[str, list[Span]] = {}
    for span in spans:
        traces.setdefault(span.trace_id, []).append(span)
    out: list[tuple[int, dict[str, Any]]] = []
    unfit: list[Unfit] = []
    issues: list[ImportIssue] = []
    for trace_id, members in traces.items():
        members.sort(key=lambda s: (s.start, s.line))
        ids = {s.id for s in members}
        root = next((s for s in members if not s.parent_id or s.parent_id not in ids), members[0])
        passages: list[dict[str, str]] = []
        for span in members:
            if span.kind != RETRIEVER:
                continue
            if not span.documents:
                unfit.append(Unfit(span.id, trace_id, "a retrieval span without documents: no passage from it"))
                continue
            for document in span.documents:
                passages.append({"id": str(len(passages) + 1), "source": document.get("source", ""),
                                 "text": document.get("text", "")})
        answer_span = None
        for span in members:
            if span.kind != LLM:
                continue
            if span.output is None or not span.output.strip():
                unfit.append(Unfit(span.id, trace_id, "an LLM span whose output holds no text"))
                continue
            answer_span = span
        if answer_span is None:
            unfit.append(Unfit(root.id, trace_id, "no LLM span with an output in this trace: nothing to review; "
                                                  "the trace is left out"))
            continue
        question = root.input or next((s.input for s in members if s.kind == RETRIEVER and s.input), None) \
            or answer_span.input
        line = min(s.line for s in members)
        if not question or not question.strip():
            problems = Problems(file, line)
            problems.add("input", f"trace {trace_id}: no question (no input text on its root, retrieval or LLM "
                                  "span)")
            issues.extend(problems.issues)
            continue
        question_id = root.metadata.get("question_id")
        out.append((line, {
            "question_id": str(question_id) if isinstance(question_id, (str, int)) and str(question_id).strip()
            else trace_id,
            "question": question.strip(), "answer": answer_span.output.strip(), "passages": passages,
            "external_id": trace_id,
        }))
    return out, unfit, issues


def text(value: Any) -> str | None:
    """The text a span's input or output holds: a string; a message
    (``content``), the last assistant message of a list, LangChain
    generations, OpenAI choices, or the first of the usual keys; None when
    there is none."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        for item in reversed(value):
            found = text(item)
            if found:
                return found
        return None
    if not isinstance(value, dict):
        return None
    if "generations" in value:
        return text(value["generations"])
    if "choices" in value:
        return text(value["choices"])
    if isinstance(value.get("message"), dict):
        return text(value["message"])
    if isinstance(value.get("kwargs"), dict):
        return text(value["kwargs"])
    for key in (*_TEXT_KEYS, *_QUESTION_KEYS):
        if key in value:
            found = text(value[key])
            if found:
                return found
    return None


def question_text(value: Any) -> str | None:
    """A span input's question: a string, or the usual keys of an input
    object (``question``, ``query``, ``input`` …), or the last user message."""
    if isinstance(value, str):
        try:
            decoded = json.loads(value)
        except ValueError:
            return value
        return question_text(decoded) if isinstance(decoded, (dict, list)) else value
    if isinstance(value, dict):
        for key in _QUESTION_KEYS:
            if key in value:
                found = question_text(value[key])
                if found:
                    return found
        if "messages" in value:
            return question_text(value["messages"])
        return None
    if isinstance(value, list):
        users = [m for m in value if isinstance(m, dict) and m.get("role") in ("user", "human")]
        for message in reversed(users or value):
            found = question_text(message.get("content") if isinstance(message, dict) else message)
            if found:
                return found
    return None


def document(value: Any, position: int) -> dict[str, str] | None:
    """A retrieved document (LangChain ``page_content``/``metadata``, a
    ``content``/``text`` object, or a string) as ``{"source", "text"}``."""
    if isinstance(value, str):
        return {"source": "", "text": value}
    if not isinstance(value, dict):
        return None
    body = value.get("page_content", value.get("pageContent", value.get("content", value.get("text"))))
    if isinstance(value.get("kwargs"), dict) and body is None:
        return document(value["kwargs"], position)
    if not isinstance(body, str):
        return None
    metadata = value.get("metadata")
    if isinstance(metadata, str):
        try:
            metadata = json.loads(metadata)
        except ValueError:
            metadata = {}
    metadata = metadata if isinstance(metadata, dict) else {}
    source = next((str(metadata[k]) for k in _SOURCE_KEYS if metadata.get(k)), "") or str(value.get("id") or "")
    return {"source": source, "text": body}


def not_a_record(source: SourceFile, line: int, what: str) -> ImportIssue:
    return file_issue(source, f"expected {what}", line=line, field="(line)")
