"""LangSmith runs → :class:`Span`.

An export is a JSON array, a JSON object or JSON Lines of LangSmith runs, as
``Client.list_runs`` gives them and the LangSmith docs describe a run
(``id``, ``trace_id``, ``parent_run_id``, ``run_type``: ``llm``,
``retriever``, ``chain`` …, ``name``, ``start_time``, ``inputs``,
``outputs``, ``extra.metadata``); a run's ``child_runs`` are read too. A
retriever's documents are its ``outputs.documents`` (or ``outputs.output``):
``page_content``, ``metadata``; an LLM run's answer is its
``outputs.generations`` (LangChain) or message/``content``/``output``. The
root run's ``extra.metadata.question_id`` names the question.
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
            yield not_a_record(source, line, "a run: a JSON object")
            continue
        problems = Problems(source.name, line)
        found = list(_runs(value, "", line, problems, parent=None, trace=None))
        yield from problems.issues if problems else found


def _runs(value: dict[str, Any], where: str, line: int, problems: Problems, *, parent: str | None,
          trace: str | None) -> Iterator[Span]:
    run_id = value.get("id")
    trace_id = value.get("trace_id", trace)
    for name, given in (("id", run_id), ("trace_id", trace_id)):
        if not isinstance(given, str) or not given.strip():
            problems.add(f"{where}{name}", "missing: every run names itself and its trace")
    if problems:
        return
    kind = str(value.get("run_type") or "").lower()
    extra = value.get("extra") if isinstance(value.get("extra"), dict) else {}
    metadata = extra.get("metadata") if isinstance(extra.get("metadata"), dict) else {}
    span = Span(id=run_id, trace_id=trace_id, parent_id=value.get("parent_run_id", parent), kind=kind, line=line,
                name=str(value.get("name") or ""), start=str(value.get("start_time") or ""),
                input=question_text(value.get("inputs")), metadata=metadata)
    outputs = value.get("outputs")
    if kind == RETRIEVER:
        items = outputs.get("documents", outputs.get("output")) if isinstance(outputs, dict) else outputs
        items = items if isinstance(items, list) else []
        span.documents = [d for k, item in enumerate(items) if (d := document(item, k)) is not None]
    else:
        span.output = text(outputs)
    if kind == LLM and span.output is None and isinstance(outputs, dict):
        span.output = text(outputs.get("generations"))
    yield span
    children = value.get("child_runs")
    if isinstance(children, list):
        for k, child in enumerate(children):
            if isinstance(child, dict):
                yield from _runs(child, f"{where}child_runs[{k}].", line, problems, parent=run_id, trace=trace_id)
