"""ExpertQA (Malaviya et al., NAACL 2024): ``data/r2_compiled_anon.jsonl``
and the files of the same shape (``data/lfqa/*.jsonl``) → answers, no ORM.

Each line is one question written by an expert, with ``answers``: system
name → answer (``answer_string``, ``claims``, ``annotator_id`` of the expert
who judged it). Each claim has ``claim_string``, ``evidence`` (``"[n] URL
passage"`` or ``"[n] URL"``), the expert's ``support`` and ``worthiness``
(fields of the repository's ``data_utils/example_utils.py``).

Mapping (SPEC §6):

- question id ``expertqa:`` + SHA-1 of the question text (12 hex digits, as
  ``fixtures/expertqa_dev.jsonl``); run = the system (``rr_gs_gpt4`` …);
- passages = the evidence entries, by their marker number ``n`` (source =
  the URL, text = the passage; URL-only evidence has an empty text);
- claims = ``claim_string`` citing the numbers of its evidence;
- label, by the expert of the answer (reviewer ``expertqa-<annotator_id>``,
  kind ``external``): ``Complete`` → SUPPORTED; ``Partial``, ``Incomplete``
  or ``Missing`` on a cited claim → UNSUPPORTED; a claim without evidence →
  UNCITED; ``N/A`` (could not judge) or none → no label (pending);
- the expert's graded label is kept in the justification: ``ExpertQA
  support: Partial; worthiness: Yes`` then their ``reason_missing_support``.

Lost: ``worthiness`` (is the claim worth citing?) is kept as text only: it
is not SPEC's "not a factual claim" (a claim may be factual and common
knowledge); revised claims, answers and evidence, ``usefulness``,
``informativeness``, ``correctness``, ``reliability`` and the atomic claims
are not imported.
"""

from __future__ import annotations

import re
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
    stable_id,
    text_field,
)

SOURCE = DatasetSource(
    name="ExpertQA (Malaviya et al., NAACL 2024)",
    url="https://github.com/chaitanyamalaviya/ExpertQA",
    commit="1aa7ba81bd4c083c12ef1aa2fee338f6cb60fa87",
    licence="MIT",
    files="data/r2_compiled_anon.jsonl (or data/lfqa/*.jsonl: the same shape)",
    note=("support Complete → SUPPORTED; Partial, Incomplete, Missing on a cited claim → UNSUPPORTED; no evidence "
          "→ UNCITED; N/A → no label. The expert's support and worthiness are in each justification; worthiness "
          "is not mapped to 'not factual'. Revised claims, usefulness, correctness, reliability and atomic claims "
          "are not imported."),
)
DEFAULT_RUN = "expertqa"
SUPPORT = {"Complete": "SUPPORTED", "Partial": "UNSUPPORTED", "Incomplete": "UNSUPPORTED",
           "Missing": "UNSUPPORTED", "N/A": None, None: None}
_EVIDENCE = re.compile(r"^\[(\d+)\]\s*(\S*)\s*(.*)$", re.DOTALL)


def drafts(files: list[SourceFile]) -> Iterator[Draft]:
    """One draft per (question, system) of every file (module docstring)."""
    for source in files:
        yield from drafts_from_lines(source, lambda line, value, problems, name=source.name:
                                     _line(name, line, value, problems))


def _line(name: str, line: int, value: dict[str, Any], problems: Problems) -> list[Draft]:
    question = text_field(value.get("question"), "question", problems)
    answers = dict_field(value.get("answers"), "answers", problems)
    if problems:
        return [Draft(name, line, None, None, problems.issues)]
    out = []
    for system, item in answers.items():
        answer_problems = Problems(name, line)
        answer = _answer(question, system, item, f"answers.{system}", answer_problems)
        out.append(Draft(name, line, system, None if answer_problems else answer, answer_problems.issues))
    return out


def _answer(question: str, system: str, item: Any, where: str, problems: Problems) -> dict[str, Any]:
    item = dict_field(item, where, problems)
    text = text_field(item.get("answer_string"), f"{where}.answer_string", problems)
    annotator = text_field(item.get("annotator_id"), f"{where}.annotator_id", problems, required=False).strip()
    reviewer = f"expertqa-{annotator}" if annotator else "expertqa-annotator"
    passages: dict[str, dict[str, str]] = {}
    claims = []
    for k, raw in enumerate(list_field(item.get("claims"), f"{where}.claims", problems)):
        cwhere = f"{where}.claims[{k}]"
        raw = dict_field(raw, cwhere, problems)
        claim_text = text_field(raw.get("claim_string"), f"{cwhere}.claim_string", problems)
        cited: list[str] = []
        for j, entry in enumerate(list_field(raw.get("evidence"), f"{cwhere}.evidence", problems, required=False)):
            number = _evidence(entry, f"{cwhere}.evidence[{j}]", passages, problems)
            if number is not None and number not in cited:
                cited.append(number)
        support = raw.get("support")
        label = choice(support, f"{cwhere}.support", problems, SUPPORT)
        worthiness = raw.get("worthiness")
        graded = f"ExpertQA support: {support if support is not None else '—'}"
        if worthiness is not None:
            graded += f"; worthiness: {worthiness}"
        reason = raw.get("reason_missing_support")
        note = f"{graded}. {reason.strip()}" if isinstance(reason, str) and reason.strip() else graded
        claim: dict[str, Any] = {"text": claim_text.strip(), "citations": [{"passage_id": n} for n in cited]}
        if not cited:
            label = "UNCITED"
        if label is not None:
            claim.update(label=label, justification=note, reviewer=reviewer)
        claims.append(claim)
    return {"question_id": stable_id("expertqa", question), "question": question, "answer": text,
            "passages": list(passages.values()), "claims": claims}


def _evidence(entry: Any, where: str, passages: dict[str, dict[str, str]], problems: Problems) -> str | None:
    """The marker number of one evidence entry, its passage added to ``passages``."""
    if not isinstance(entry, str):
        problems.add(where, f"must be text like '[1] https://… passage', got {type(entry).__name__}")
        return None
    match = _EVIDENCE.match(entry.strip())
    if match is None:
        problems.add(where, f"expected '[n] URL passage', got {entry[:60]!r}")
        return None
    number, url, text = match.group(1), match.group(2), match.group(3).strip()
    known = passages.get(number)
    if known is None:
        passages[number] = {"id": number, "source": url, "text": text}
    elif (known["source"], known["text"]) != (url, text):
        problems.add(where, f"[{number}] is another passage than the [{number}] of an earlier claim of this "
                            "answer: one number, one passage")
    return number
