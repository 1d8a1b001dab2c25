"""Langfuse traces → :class:`Span`.

An export is what Langfuse downloads or its API returns: a trace with its
``observations`` (the trace page's **Download JSON**, ``trace-<id>.json``,
or ``GET /api/public/traces/{id}``: ``id``, ``input``, ``output``,
``metadata``, ``observations``; also ``{"trace": …, "observations": …}``),
an array or JSON Lines of such traces, or of observations alone (the
observations table's export: each with ``traceId``). An observation:
``id``, ``traceId``, ``type`` (``GENERATION`` is an LLM call;
``RETRIEVER``, or a ``SPAN`` whose name holds "retriev", a retrieval),
``name``, ``startTime``, ``input``, ``output``, ``parentObservationId``,
``metadata``. A retrieval's documents are its ``output`` (a list, or
``{"documents": […]}``: LangChain ``page_content``/``metadata``, ``content``
or plain strings). The trace's ``metadata.question_id`` names the question.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from labeling.importers.datasets.common import Problems, SourceFile
from labeling.importers.records import ImportIssue
from labeling.importers.traces.common import LLM, RETRIEVER, Span, document, not_a_record, question_text, records, text


def spans(source: SourceFile) -> Iterator[Span | ImportIssue]:
    for line, value, issue in records(source):
        if issue is not None:
            yield issue
            continue
        if not isinstance(value, dict):
            yield not_a_record(source, line, "a trace or an observation: a JSON object")
            continue
        problems = Problems(source.name, line)
        found = list(_spans(value, line, problems))
        yield from problems.issues if problems else found


def _spans(value: dict[str, Any], line: int, problems: Problems) -> Iterator[Span]:
    if "observations" in value or "trace" in value:
        trace = value.get("trace") if isinstance(value.get("trace"), dict) else value
        trace_id = trace.get("id")
        if not isinstance(trace_id, str) or not trace_id.strip():
            problems.add("id", "missing: the trace's id")
            return
        metadata = trace.get("metadata") if isinstance(trace.get("metadata"), dict) else {}
        yield Span(id=trace_id, trace_id=trace_id, parent_id=None, kind="trace", line=line,
                   name=str(trace.get("name") or ""), start=str(trace.get("timestamp") or ""),
                   input=question_text(trace.get("input")), output=text(trace.get("output")), metadata=metadata)
        observations = value.get("observations")
        if not isinstance(observations, list):
            problems.add("observations", "must be a list of observations")
            return
        for k, observation in enumerate(observations):
            if not isinstance(observation, dict):
                problems.add(f"observations[{k}]", "must be an observation object")
                continue
            span = _observation(observation, f"observations[{k}].", line, problems, trace_id=trace_id)
            if span is not None:
                yield span
        return
    span = _observation(value, "", line, problems)
    if span is not None:
        yield span


def _observation(value: dict[str, Any], where: str, line: int, problems: Problems, *,
                 trace_id: str | None = None) -> Span | None:
    span_id, trace = value.get("id"), value.get("traceId", trace_id)
    for name, given in (("id", span_id), ("traceId", trace)):
        if not isinstance(given, str) or not given.strip():
            problems.add(f"{where}{name}", "missing: every observation names itself and its trace")
    if problems:
        return None
    kind = str(value.get("type") or "").upper()
    name = str(value.get("name") or "")
    if kind == "GENERATION":
        kind = LLM
    elif kind == "RETRIEVER" or (kind == "SPAN" and "retriev" in name.lower()):
        kind = RETRIEVER
    else:
        kind = kind.lower()
    span = Span(id=span_id, trace_id=trace, parent_id=value.get("parentObservationId") or trace, kind=kind,
                line=line, name=name, start=str(value.get("startTime") or ""), input=question_text(value.get("input")))
    output = value.get("output")
    if kind == RETRIEVER:
        items = output.get("documents") if isinstance(output, dict) else output
        items = items if isinstance(items, list) else []
        span.documents = [d for k, item in enumerate(items) if (d := document(item, k)) is not None]
    else:
        span.output = text(output)
    return span
