"""Readers of tracing tools' exports (SPEC §6): OpenInference/Phoenix,
Langfuse, LangSmith, each turning its file into ``common.Span`` records;
``common.answers`` makes one answer per trace. No ORM:
``labeling.importers.traces.load`` writes."""

from __future__ import annotations

from types import ModuleType

from labeling.importers.traces import langfuse, langsmith, openinference

FORMATS: dict[str, ModuleType] = {"openinference": openinference, "langfuse": langfuse, "langsmith": langsmith}
