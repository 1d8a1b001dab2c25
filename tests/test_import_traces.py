"""``import_traces --format openinference|langfuse|langsmith FILE`` (SPEC §6,
part 4): each trace becomes an answer (retrieval documents → passages, the
LLM's output → the answer, its markers → citations, the trace id → the
answer's external id); re-importing changes nothing; spans that do not fit
are listed by id; a malformed record refuses the file (line, field).

The files are written here in the shapes the tools document: OpenInference
spans as Phoenix's "What are Traces" page prints them (OpenTelemetry JSON,
flat ``attributes`` with ``openinference.span.kind``,
``retrieval.documents.N.document.*``, ``llm.output_messages.N.message.*``);
a Langfuse trace download (``trace-<id>.json``: the trace with its
``observations``) and an observations export; LangSmith runs
(``run_type``, ``inputs``, ``outputs.documents``, ``outputs.generations``).
Phoenix's own example spans are not copied: the repository's licence
(Elastic License 2.0) is not one the fixtures take.
"""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

from labeling.importers.records import ImportFailed
from labeling.importers.traces.load import trace_import
from labeling.models import Answer, Citation, Claim, Passage, Project, Question
from tests.tables import row_counts

pytestmark = pytest.mark.django_db

QUESTION = "What weight limit applies to Priority Mail?"
ANSWER = "Priority Mail may not weigh more than 70 pounds [1]. Its length and girth may not exceed 108 inches [2]."
CHUNKS = ["The maximum weight is 70 pounds.", "The combined length and girth may not exceed 108 inches."]


def openinference_spans(trace_id: str = "0x6c80880dbeb609e2ed41e06a6397a0dd", *, metadata: str | None = None,
                        answer: str = ANSWER) -> list[dict]:
    def span(name: str, span_id: str, parent: str | None, start: str, attributes: dict) -> dict:
        return {"name": name, "context": {"trace_id": trace_id, "span_id": span_id, "trace_state": "[]"},
                "kind": "SpanKind.INTERNAL", "parent_id": parent, "start_time": start,
                "end_time": start, "status": {"status_code": "OK"}, "attributes": attributes, "events": [],
                "links": [], "resource": {"attributes": {}, "schema_url": ""}}

    root = {"openinference.span.kind": "CHAIN", "input.value": QUESTION, "output.value": answer}
    if metadata:
        root["metadata"] = metadata
    retriever = {"openinference.span.kind": "RETRIEVER", "input.value": QUESTION}
    for k, chunk in enumerate(CHUNKS):
        retriever.update({
            f"retrieval.documents.{k}.document.id": f"doc-{k}",
            f"retrieval.documents.{k}.document.score": 0.77 - k / 100,
            f"retrieval.documents.{k}.document.content": chunk,
            f"retrieval.documents.{k}.document.metadata": json.dumps({"page_label": str(7 - k),
                                                                      "file_name": "/data/101.pdf"}),
        })
    llm = {"openinference.span.kind": "LLM", "llm.input_messages.0.message.role": "system",
           "llm.input_messages.0.message.content": "Answer from the documents.",
           "llm.input_messages.1.message.role": "user", "llm.input_messages.1.message.content": QUESTION,
           "llm.model_name": "gpt-4-turbo-preview", "llm.output_messages.0.message.role": "assistant",
           "llm.output_messages.0.message.content": answer, "output.value": answer}
    return [span("query", "0x7eb5df0046c77cd2", None, "2024-05-08T21:46:11.000000Z", root),
            span("retrieve", "0x03f3466720f4bfc7", "0x7eb5df0046c77cd2", "2024-05-08T21:46:11.044464Z", retriever),
            span("llm", "0xd9bdedf0df0b7208", "0x7eb5df0046c77cd2", "2024-05-08T21:46:11.480777Z", llm)]


def write(tmp_path, name: str, content) -> str:
    path = tmp_path / name
    path.write_text(content if isinstance(content, str) else json.dumps(content, indent=2))
    return str(path)


@pytest.fixture
def project():
    return Project.objects.create(slug="traces", name="Traces")


def the_answer(project) -> Answer:
    return Answer.objects.get(run__project=project)


def assert_the_answer(answer: Answer, *, external_id: str, question_id: str) -> None:
    assert (answer.external_id, answer.question.question_id, answer.question.text) == (
        external_id, question_id, QUESTION)
    assert answer.text == ANSWER
    assert list(Passage.objects.filter(answer=answer).values_list("passage_id", "text")) == [
        ("1", CHUNKS[0]), ("2", CHUNKS[1])]
    assert [(c.text, [x.cited_id for x in c.citations.all()]) for c in Claim.objects.filter(answer=answer)] == [
        ("Priority Mail may not weigh more than 70 pounds [1].", ["1"]),
        ("Its length and girth may not exceed 108 inches [2].", ["2"])]
    assert not Citation.objects.filter(claim__answer=answer, fabricated=True).exists()


# ------------------------------------------------------------- OpenInference

def test_openinference_spans_become_an_answer(project, tmp_path):
    path = write(tmp_path, "spans.json", openinference_spans())
    result = trace_import(project=project, format="openinference", file=path, run_name="phoenix")
    assert list(result.runs) == ["phoenix"]
    assert result.unfit == []
    answer = the_answer(project)
    assert_the_answer(answer, external_id="0x6c80880dbeb609e2ed41e06a6397a0dd",
                      question_id="0x6c80880dbeb609e2ed41e06a6397a0dd")
    assert list(Passage.objects.filter(answer=answer).values_list("source", flat=True)) == ["/data/101.pdf"] * 2


def test_nested_attributes_in_json_lines_read_the_same(project, tmp_path):
    def nest(flat: dict) -> dict:
        nested: dict = {}
        for key, value in flat.items():
            node = nested
            *parts, last = key.split(".")
            for part in parts:
                node = node.setdefault(part, {})
            node[last] = value
        return nested

    spans = [{**span, "attributes": nest(span["attributes"])} for span in openinference_spans()]
    # Nested lists of documents come as JSON arrays of objects in such exports.
    for span in spans:
        documents = span["attributes"].get("retrieval", {}).get("documents")
        if documents:
            span["attributes"]["retrieval"]["documents"] = [documents[k] for k in sorted(documents)]
    path = write(tmp_path, "spans.jsonl", "".join(json.dumps(span) + "\n" for span in spans))
    trace_import(project=project, format="openinference", file=path, run_name="phoenix")
    assert_the_answer(the_answer(project), external_id="0x6c80880dbeb609e2ed41e06a6397a0dd",
                      question_id="0x6c80880dbeb609e2ed41e06a6397a0dd")


def test_a_question_id_in_the_metadata_names_the_question(project, tmp_path):
    """Two runs' traces of one question meet on question_id, each keeping its trace id."""
    first = write(tmp_path, "a.json", openinference_spans("0xaaa", metadata='{"question_id": "q-weight"}'))
    second = write(tmp_path, "b.json", openinference_spans("0xbbb", metadata='{"question_id": "q-weight"}'))
    trace_import(project=project, format="openinference", file=first, run_name="prompt-v1")
    trace_import(project=project, format="openinference", file=second, run_name="prompt-v2")
    assert Question.objects.get().question_id == "q-weight"
    assert sorted(Answer.objects.values_list("run__name", "external_id")) == [("prompt-v1", "0xaaa"),
                                                                               ("prompt-v2", "0xbbb")]


def test_reimporting_the_same_traces_changes_nothing(project, tmp_path):
    path = write(tmp_path, "spans.json", openinference_spans())
    trace_import(project=project, format="openinference", file=path, run_name="phoenix")
    before = {k: v for k, v in row_counts().items() if k != "labeling.AuditEvent"}
    result = trace_import(project=project, format="openinference", file=path, run_name="phoenix")
    assert (result.report.answers_created, result.report.answers_unchanged) == (0, 1)
    assert {k: v for k, v in row_counts().items() if k != "labeling.AuditEvent"} == before


def test_spans_that_do_not_fit_are_listed_by_id(project, tmp_path):
    """Trace 0xbad: its retriever returned nothing and it has no LLM span → both listed, the trace left out."""
    bad = openinference_spans("0xbad")[:2]
    for key in list(bad[1]["attributes"]):
        if key.startswith("retrieval."):
            del bad[1]["attributes"][key]
    path = write(tmp_path, "spans.json", openinference_spans() + bad)
    out = io.StringIO()
    call_command("import_traces", "--format", "openinference", path, "--run", "phoenix", "--project", "traces",
                 stdout=out)
    assert out.getvalue().splitlines()[:2] == [
        "left out: span 0x03f3466720f4bfc7 (trace 0xbad): a retrieval span without documents: no passage from it",
        "left out: span 0x7eb5df0046c77cd2 (trace 0xbad): no LLM span with an output in this trace: nothing to "
        "review; the trace is left out"]
    assert list(Answer.objects.values_list("external_id", flat=True)) == ["0x6c80880dbeb609e2ed41e06a6397a0dd"]


def test_a_span_without_its_trace_id_refuses_the_file(project, tmp_path):
    spans = openinference_spans()
    del spans[2]["context"]["trace_id"]
    path = write(tmp_path, "spans.json", spans)
    before = row_counts()
    with pytest.raises(ImportFailed) as failure:
        trace_import(project=project, format="openinference", file=path, run_name="phoenix")
    # The third span of the array (json.dumps, indent=2) starts on the third "  {" line.
    third = [n for n, text in enumerate(open(path).read().splitlines(), start=1) if text == "  {"][2]
    assert [(i.file, i.line, i.field, i.reason) for i in failure.value.issues] == [
        ("spans.json", third, "context.trace_id", "missing: every span names its trace and itself")]
    assert row_counts() == before


# ------------------------------------------------------------------ Langfuse

def langfuse_trace(trace_id: str = "7f1c2b4e-trace") -> dict:
    return {
        "id": trace_id, "name": "rag-query", "timestamp": "2025-03-01T10:00:00.000Z",
        "input": {"question": QUESTION}, "output": ANSWER, "metadata": {"app": "mail-bot"},
        "observations": [
            {"id": "obs-retrieve", "traceId": trace_id, "type": "SPAN", "name": "retrieve-documents",
             "startTime": "2025-03-01T10:00:00.100Z", "input": {"query": QUESTION},
             "output": [{"page_content": CHUNKS[0], "metadata": {"source": "dmm-101.pdf"}},
                        {"page_content": CHUNKS[1], "metadata": {"source": "dmm-101.pdf"}}],
             "parentObservationId": None},
            {"id": "obs-llm", "traceId": trace_id, "type": "GENERATION", "name": "answer",
             "startTime": "2025-03-01T10:00:00.400Z", "model": "gpt-4o",
             "input": [{"role": "system", "content": "Answer from the documents."},
                       {"role": "user", "content": QUESTION}],
             "output": {"role": "assistant", "content": ANSWER}, "parentObservationId": None},
        ],
        "scores": [],
    }


def test_a_langfuse_trace_download_becomes_an_answer(project, tmp_path):
    path = write(tmp_path, "trace-7f1c2b4e-trace.json", langfuse_trace())
    result = trace_import(project=project, format="langfuse", file=path, run_name="langfuse")
    assert result.unfit == []
    assert_the_answer(the_answer(project), external_id="7f1c2b4e-trace", question_id="7f1c2b4e-trace")
    assert list(Passage.objects.values_list("source", flat=True)) == ["dmm-101.pdf", "dmm-101.pdf"]


def test_a_langfuse_observations_export_in_json_lines(project, tmp_path):
    """The observations table export: observations alone, each naming its trace; the question comes
    from the retrieval's input (no trace record)."""
    observations = langfuse_trace()["observations"]
    path = write(tmp_path, "observations.jsonl", "".join(json.dumps(o) + "\n" for o in observations))
    trace_import(project=project, format="langfuse", file=path, run_name="langfuse")
    assert_the_answer(the_answer(project), external_id="7f1c2b4e-trace", question_id="7f1c2b4e-trace")


def test_a_langfuse_observation_without_its_trace_is_refused_by_line(project, tmp_path):
    observations = langfuse_trace()["observations"]
    del observations[1]["traceId"]
    path = write(tmp_path, "observations.jsonl", "".join(json.dumps(o) + "\n" for o in observations))
    with pytest.raises(ImportFailed) as failure:
        trace_import(project=project, format="langfuse", file=path, run_name="langfuse")
    assert [(i.line, i.field, i.reason) for i in failure.value.issues] == [
        (2, "traceId", "missing: every observation names itself and its trace")]


# ----------------------------------------------------------------- LangSmith

def langsmith_runs(trace_id: str = "0b8c1f7e-5d4a-4c2e-9f10-3a7b6c5d4e21") -> list[dict]:
    return [
        {"id": trace_id, "trace_id": trace_id, "parent_run_id": None, "run_type": "chain", "name": "RunnableSequence",
         "start_time": "2025-03-01T10:00:00.000000", "inputs": {"question": QUESTION}, "outputs": {"output": ANSWER},
         "extra": {"metadata": {"question_id": "q-weight"}}},
        {"id": "run-retriever", "trace_id": trace_id, "parent_run_id": trace_id, "run_type": "retriever",
         "name": "VectorStoreRetriever", "start_time": "2025-03-01T10:00:00.100000", "inputs": {"query": QUESTION},
         "outputs": {"documents": [{"page_content": c, "metadata": {"source": "dmm-101.pdf"}, "type": "Document"}
                                   for c in CHUNKS]}},
        {"id": "run-llm", "trace_id": trace_id, "parent_run_id": trace_id, "run_type": "llm", "name": "ChatOpenAI",
         "start_time": "2025-03-01T10:00:00.400000", "inputs": {"messages": [[{"role": "user", "content": QUESTION}]]},
         "outputs": {"generations": [[{"text": ANSWER, "type": "ChatGeneration",
                                       "message": {"type": "ai", "content": ANSWER}}]]}},
    ]


def test_langsmith_runs_become_an_answer(project, tmp_path):
    path = write(tmp_path, "runs.jsonl", "".join(json.dumps(run) + "\n" for run in langsmith_runs()))
    result = trace_import(project=project, format="langsmith", file=path, run_name="langsmith")
    assert result.unfit == []
    assert_the_answer(the_answer(project), external_id="0b8c1f7e-5d4a-4c2e-9f10-3a7b6c5d4e21",
                      question_id="q-weight")


def test_langsmith_child_runs_are_read(project, tmp_path):
    root, retriever, llm = langsmith_runs()
    for child in (retriever, llm):
        del child["trace_id"], child["parent_run_id"]
    path = write(tmp_path, "run.json", {**root, "child_runs": [retriever, llm]})
    trace_import(project=project, format="langsmith", file=path, run_name="langsmith")
    assert_the_answer(the_answer(project), external_id="0b8c1f7e-5d4a-4c2e-9f10-3a7b6c5d4e21",
                      question_id="q-weight")


def test_import_traces_refuses_a_file_that_is_not_json(project, tmp_path):
    path = tmp_path / "runs.jsonl"
    path.write_text("not json\n")
    err = io.StringIO()
    with pytest.raises(CommandError, match="1 problem"):
        call_command("import_traces", "--format", "langsmith", str(path), "--project", "traces", stderr=err)
    assert err.getvalue().strip() == "runs.jsonl: line 1: (line): invalid JSON: Expecting value at column 1"
