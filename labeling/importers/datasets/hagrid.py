"""HAGRID (Kamalloo, Jafari, Zhang, Thakur & Lin, 2023):
``hagrid-v1.0-en/{train,dev}.jsonl`` of the Hugging Face dataset
``miracl/hagrid`` → answers, no ORM.

One query per line (the features of the dataset's loading script
``hagrid.py``): ``query_id``, ``query``, ``quotes`` (the relevant passages:
``idx``, ``docid``, ``text``) and ``answers``: each an LLM explanation
(``answer``, ``informative``, ``attributable``) split into ``sentences``
(``text`` with ``[n]`` markers naming quote ``idx``, ``index``,
``informative``, ``attributable``: 1, 0, or null when not judged).

Mapping (SPEC §6):

- question id ``hagrid:<query_id>``; each of a query's answers is its own
  run: ``hagrid-a1``, ``hagrid-a2`` … by position (HAGRID's answers are
  alternative generations, not named systems);
- passages = the quotes (id = ``idx``, source = ``docid``);
- claims = the sentences, citing their markers;
- label, by one reviewer ``hagrid-annotator`` (the dataset names none):
  ``attributable`` 1 → SUPPORTED, 0 → UNSUPPORTED, null → no label; a
  sentence without a marker → UNCITED; the sentence's ``attributable`` and
  ``informative`` as given are the justification.

Lost: the answer-level ``informative``/``attributable`` judgments (kept only
through the sentences), ``answer_type``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from labeling.importers.datasets.common import (
    DatasetSource,
    Draft,
    Problems,
    SourceFile,
    choice,
    dict_field,
    drafts_from_lines,
    list_field,
    text_field,
)
from labeling.importers.markers import find_markers

SOURCE = DatasetSource(
    name="HAGRID (Kamalloo et al., 2023)",
    url="https://github.com/project-miracl/hagrid (data: https://huggingface.co/datasets/miracl/hagrid)",
    commit="7ffab03942e93d3138b0dbd14ad0a844f8a075d5",
    licence="Apache-2.0",
    files="hagrid-v1.0-en/train.jsonl or dev.jsonl of miracl/hagrid",
    note=("Each answer of a query is a run hagrid-a<k>; sentences are claims citing their [n] quotes; attributable "
          "1 → SUPPORTED, 0 → UNSUPPORTED, null → no label, no marker → UNCITED, by one reviewer hagrid-annotator. "
          "Lost: answer-level judgments, answer_type."),
)
DEFAULT_RUN = "hagrid"
DEFAULT_REVIEWER = "hagrid-annotator"
ATTRIBUTABLE = {1: "SUPPORTED", 0: "UNSUPPORTED", None: None}


def drafts(files: list[SourceFile]) -> Iterator[Draft]:
    """One draft per (query, answer) (module docstring)."""
    for source in files:
        yield from drafts_from_lines(source, lambda line, value, problems, name=source.name:
                                     _line(name, line, value, problems))


def _line(name: str, line: int, value: dict[str, Any], problems: Problems) -> list[Draft]:
    key = text_field(value.get("query_id"), "query_id", problems)
    query = text_field(value.get("query"), "query", problems)
    passages: dict[str, dict[str, str]] = {}
    for k, quote in enumerate(list_field(value.get("quotes"), "quotes", problems)):
        quote = dict_field(quote, f"quotes[{k}]", problems)
        idx = text_field(quote.get("idx"), f"quotes[{k}].idx", problems)
        if idx in passages:
            problems.add(f"quotes[{k}].idx", f"quote {idx} is given twice")
            continue
        passages[idx] = {"id": idx, "source": text_field(quote.get("docid"), f"quotes[{k}].docid", problems,
                                                        required=False),
                         "text": text_field(quote.get("text"), f"quotes[{k}].text", problems)}
    answers = list_field(value.get("answers"), "answers", problems)
    if problems:
        return [Draft(name, line, None, None, problems.issues)]
    out = []
    for k, item in enumerate(answers):
        answer_problems = Problems(name, line)
        answer = _answer(item, f"answers[{k}]", answer_problems)
        answer.update(question_id=f"hagrid:{key}", question=query, passages=list(passages.values()))
        out.append(Draft(name, line, f"hagrid-a{k + 1}", None if answer_problems else answer, answer_problems.issues))
    return out


def _answer(item: Any, where: str, problems: Problems) -> dict[str, Any]:
    item = dict_field(item, where, problems)
    text = text_field(item.get("answer"), f"{where}.answer", problems)
    claims = []
    for k, sentence in enumerate(list_field(item.get("sentences"), f"{where}.sentences", problems)):
        swhere = f"{where}.sentences[{k}]"
        sentence = dict_field(sentence, swhere, problems)
        sentence_text = text_field(sentence.get("text"), f"{swhere}.text", problems)
        markers, marker_problems = find_markers(sentence_text)
        for message in marker_problems:
            problems.add(f"{swhere}.text", message)
        cited = list(dict.fromkeys(cited for marker in markers for cited in marker.ids))
        attributable = sentence.get("attributable")
        label = choice(attributable, f"{swhere}.attributable", problems, ATTRIBUTABLE) if cited else "UNCITED"
        claim: dict[str, Any] = {"text": sentence_text.strip(), "citations": [{"passage_id": c} for c in cited]}
        if label is not None:
            claim.update(label=label, reviewer=DEFAULT_REVIEWER, justification=(
                f"HAGRID attributable: {attributable}; informative: {sentence.get('informative')}"))
        claims.append(claim)
    return {"answer": text, "claims": claims}
