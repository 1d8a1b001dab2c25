"""The service that imports a tracing tool's export as a run (SPEC §6:
``import_traces --format openinference|langfuse|langsmith FILE``): the
format's reader (``labeling.importers.traces``) reads spans, each trace
becomes one answer (its retrieval documents the passages, its LLM output the
answer, the answer's markers its citations, the trace id its external id),
and ``answers_import.records_import`` writes them all or nothing.

Malformed records (not JSON, a span without its trace id …) refuse the
file, each named by line and field. Spans that are well formed but do not
fit (a retrieval without documents, a trace without an LLM output) are left
out and listed by span id in the returned report. Re-importing the same
export changes nothing.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

from labeling.importers.answers_jsonl import _LineProblems, answer_record_from_dict
from labeling.importers.datasets.common import SourceFile, file_issue
from labeling.importers.load import ImportReport, records_import
from labeling.importers.records import ImportFailed, ImportIssue
from labeling.importers.traces import FORMATS
from labeling.importers.traces.common import Span, Unfit, answers
from labeling.models import Project, Reviewer, Run
from labeling.names import clean, validate_run_name


@dataclass
class TraceImportReport:
    """The answers import's report, the runs written and the spans left out (``unfit``)."""

    report: ImportReport
    runs: dict[str, Run]
    unfit: list[Unfit] = field(default_factory=list)


def trace_import(*, project: Project, format: str, file: Path | SourceFile, run_name: str,
                 actor: Reviewer | None = None) -> TraceImportReport:
    """Import the traces of ``file`` (``format``: openinference, langfuse,
    langsmith) into run ``run_name`` of ``project``.

    Raises ValueError for an unknown format, ValidationError for a bad run
    name, ImportFailed naming every malformed record (line, field, reason)
    or saying that no trace holds an answer; nothing is written then.
    """
    if format not in FORMATS:
        raise ValueError(f"unknown trace format {format!r}: use one of {', '.join(FORMATS)}")
    run_name = clean(run_name, validate_run_name)
    source = file if isinstance(file, SourceFile) else SourceFile(name=Path(file).name, data=Path(file).read_bytes())
    spans: list[Span] = []
    issues: list[ImportIssue] = []
    for item in FORMATS[format].spans(source):
        if isinstance(item, Span):
            spans.append(item)
        else:
            issues.append(item)
    if issues:
        raise ImportFailed(issues)
    drafts, unfit, issues = answers(spans, file=source.name)
    if issues:
        raise ImportFailed(issues)
    if not drafts:
        reasons = "; ".join(str(u) for u in unfit[:5]) or "the file holds no span"
        raise ImportFailed([file_issue(source, f"no trace holds an answer to review ({reasons})")])

    def records():
        for line, data in drafts:
            try:
                record = answer_record_from_dict({**data, "run": run_name}, line=line)
            except _LineProblems as problems:
                yield line, None, [dataclasses.replace(i, file=source.name) for i in problems.issues]
                continue
            yield line, record, [dataclasses.replace(i, file=source.name) for i in record.warnings]

    report, runs = records_import(project=project, records=records(), actor=actor, source_name=source.name)
    return TraceImportReport(report=report, runs=runs, unfit=unfit)
