"""OpenInference spans (Arize Phoenix and its instrumentations) → :class:`Span`.

An export is a JSON array, a JSON object or JSON Lines of spans in the
OpenTelemetry JSON shape that Phoenix's documentation prints ("What are
Traces", Example OTEL Spans): ``name``, ``context.trace_id``,
``context.span_id``, ``parent_id``, ``start_time`` and ``attributes`` with
the OpenInference semantic conventions, flat (``"retrieval.documents.0.
document.content"``) or nested. Read: ``openinference.span.kind``
(``RETRIEVER``, ``LLM`` …; a top-level ``span_kind`` as in Phoenix's span
frames too), ``input.value``, ``output.value``, ``llm.output_messages.N.
message.content``, ``llm.input_messages.N.message.{role,content}``,
``retrieval.documents.N.document.{id,content,metadata}`` and
``metadata`` (JSON text or object; ``question_id`` there names the
question).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from labeling.importers.datasets.common import Problems, SourceFile
from labeling.importers.records import ImportIssue
from labeling.importers.traces.common import (
    LLM,
    RETRIEVER,
    Span,
    document,
    not_a_record,
    question_text,
    records,
    text,
)

_INDEXED = re.compile(r"^(.*?)\.(\d+)\.(.*)$")


def spans(source: SourceFile) -> Iterator[Span | ImportIssue]:
    """The spans of one export file, or an issue per record that is not a span."""
    for line, value, issue in records(source):
        if issue is not None:
            yield issue
            continue
        if not isinstance(value, dict):
            yield not_a_record(source, line, "a span: a JSON object")
            continue
        problems = Problems(source.name, line)
        span = _span(value, line, problems)
        yield from problems.issues if problems else [span]


def _span(value: dict[str, Any], line: int, problems: Problems) -> Span:
    context = value.get("context") if isinstance(value.get("context"), dict) else {}
    trace_id = context.get("trace_id", value.get("context.trace_id"))
    span_id = context.get("span_id", value.get("context.span_id"))
    for name, given in (("context.trace_id", trace_id), ("context.span_id", span_id)):
        if not isinstance(given, str) or not given.strip():
            problems.add(name, "missing: every span names its trace and itself")
    attributes = flatten(value.get("attributes") or {})
    kind = str(attributes.get("openinference.span.kind") or value.get("span_kind") or "").lower()
    parent = value.get("parent_id", value.get("parent_span_id"))
    span = Span(id=str(span_id), trace_id=str(trace_id), parent_id=parent if isinstance(parent, str) else None,
                kind=kind, line=line, name=str(value.get("name") or ""), start=str(value.get("start_time") or ""))
    span.input = question_text(attributes.get("input.value")) or _last_user_message(attributes)
    metadata = attributes.get("metadata")
    if isinstance(metadata, str):
        try:
            metadata = json.loads(metadata)
        except ValueError:
            metadata = {}
    span.metadata = metadata if isinstance(metadata, dict) else {}
    if kind == LLM:
        span.output = _indexed(attributes, "llm.output_messages", "message.content")
        span.output = span.output[-1] if span.output else _plain(attributes.get("output.value"))
    elif kind == RETRIEVER:
        contents = _documents(attributes)
        span.documents = [d for d in contents if d is not None]
    else:
        span.output = _plain(attributes.get("output.value"))
    return span


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """Nested attributes as the flat dotted keys OpenInference names (lists by index)."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            out.update(flatten(item, f"{prefix}.{key}" if prefix else str(key)))
        return out
    if isinstance(value, list) and value and all(isinstance(item, dict) for item in value):
        out = {}
        for k, item in enumerate(value):
            out.update(flatten(item, f"{prefix}.{k}"))
        return out
    return {prefix: value}


def _indexed(attributes: dict[str, Any], prefix: str, suffix: str) -> list[Any]:
    """``prefix.N.suffix`` values in N order."""
    found: dict[int, Any] = {}
    for key, value in attributes.items():
        match = _INDEXED.match(key)
        if match and match.group(1) == prefix and match.group(3) == suffix:
            found[int(match.group(2))] = value
    return [found[k] for k in sorted(found)]


def _documents(attributes: dict[str, Any]) -> list[dict[str, str] | None]:
    contents = dict(enumerate(_indexed(attributes, "retrieval.documents", "document.content")))
    ids = _indexed(attributes, "retrieval.documents", "document.id")
    metadata = _indexed(attributes, "retrieval.documents", "document.metadata")
    out = []
    for k, content in contents.items():
        out.append(document({"content": content, "id": ids[k] if k < len(ids) else "",
                             "metadata": metadata[k] if k < len(metadata) else None}, k))
    return out


def _last_user_message(attributes: dict[str, Any]) -> str | None:
    roles = _indexed(attributes, "llm.input_messages", "message.role")
    contents = _indexed(attributes, "llm.input_messages", "message.content")
    users = [c for r, c in zip(roles, contents, strict=False) if r == "user" and isinstance(c, str)]
    return users[-1] if users else None


def _plain(value: Any) -> str | None:
    """An ``output.value``: the text itself, or the text of a JSON output."""
    if isinstance(value, str):
        try:
            decoded = json.loads(value)
        except ValueError:
            return value
        return text(decoded) if isinstance(decoded, (dict, list)) else value
    return None
