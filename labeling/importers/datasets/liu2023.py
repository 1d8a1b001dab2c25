"""Liu, Zhang & Liang (2023), "Evaluating Verifiability in Generative Search
Engines": ``human_evaluation_annotations.jsonl`` → answers, no ORM.

One query-response pair per line (the dataclasses of the repository's
README): ``id``, ``query``, ``response``, ``system_name`` (bing_chat,
neeva, perplexity, you), ``citations`` (``text`` such as ``[1]``,
``link_target``), ``statements_to_citation_texts`` (statement → its
citation texts) and ``annotation.statement_to_annotation``: per statement
``statement_is_verification_worthy``, ``statement_supported`` (``Yes``,
``No``, ``Citations Contradict Each Other`` or null) and
``citation_annotations`` (``citation_text``, ``citation_supports``,
``evidence``).

Mapping (SPEC §6, §4.3b):

- question id ``liu2023:`` + SHA-1 of the query; run = ``system_name``;
  answer = ``response``;
- passages = the response's citations (id = the marker's number, source =
  the link; the file holds no page text, so passages are empty);
- claims = the statements, citing their citation texts; a statement that is
  not verification-worthy is **not a factual claim** (``factual: false``);
- label, by one reviewer ``liu2023-annotator`` (the file names none):
  ``Yes`` → SUPPORTED, ``No`` or ``Citations Contradict Each Other`` →
  UNSUPPORTED (the paper counts both as no support), no citation →
  UNCITED; the value as given is the justification;
- each citation's judgment: completely supports → FULL, partially → PARTIAL,
  no support or "completely supports but also refutes" → NONE (the paper's
  reading), inaccessible or unclear statement → UNJUDGEABLE; the
  annotator's ``evidence`` is the judgment's evidence.

Lost: fluency and perceived utility ratings, the split, the citations'
character offsets, and "supports but also refutes" as distinct from NONE.
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
    stable_id,
    text_field,
)

SOURCE = DatasetSource(
    name="Evaluating Verifiability in Generative Search Engines (Liu, Zhang & Liang, Findings of EMNLP 2023)",
    url="https://github.com/nelson-liu/evaluating-verifiability-in-generative-search-engines",
    commit="2c6b485ae1c2bd296ad7d5e0eee4da4065535e57",
    licence="MIT",
    files="human_evaluation_annotations.jsonl",
    note=("Statements are claims citing their citation texts; not verification-worthy → not factual; Yes → "
          "SUPPORTED, No or Contradict → UNSUPPORTED, no citation → UNCITED, by one reviewer liu2023-annotator; "
          "citation support complete/partial/none/refutes/inaccessible/unclear → FULL/PARTIAL/NONE/NONE/"
          "UNJUDGEABLE/UNJUDGEABLE. Lost: fluency, utility, page texts (not in the file)."),
)
DEFAULT_RUN = "liu2023"
DEFAULT_REVIEWER = "liu2023-annotator"
SUPPORTED = {"Yes": "SUPPORTED", "No": "UNSUPPORTED", "Citations Contradict Each Other": "UNSUPPORTED", None: None}
SUPPORTS = {
    "Citation Completely Supports Statement": "FULL",
    "Citation Partially Supports Statement": "PARTIAL",
    "Citation Provides No Support for Statement": "NONE",
    "Citation Completely Supports but Also Refutes Statement": "NONE",
    "Citation Inaccessible": "UNJUDGEABLE",
    "Statement is Unclear, Can't Make Judgment": "UNJUDGEABLE",
}


def drafts(files: list[SourceFile]) -> Iterator[Draft]:
    """One draft per query-response pair (module docstring)."""
    for source in files:
        yield from drafts_from_lines(source, lambda line, value, problems, name=source.name: [
            _draft(name, line, value, problems)])


def _draft(name: str, line: int, value: dict[str, Any], problems: Problems) -> Draft:
    query = text_field(value.get("query"), "query", problems)
    response = text_field(value.get("response"), "response", problems, required=False)
    system = text_field(value.get("system_name"), "system_name", problems)
    passages: dict[str, dict[str, str]] = {}
    for k, citation in enumerate(list_field(value.get("citations"), "citations", problems, required=False)):
        citation = dict_field(citation, f"citations[{k}]", problems)
        cited = _marker(citation.get("text"), f"citations[{k}].text", problems)
        link = text_field(citation.get("link_target"), f"citations[{k}].link_target", problems, required=False)
        if cited is None:
            continue
        if cited in passages and passages[cited]["source"] != link:
            problems.add(f"citations[{k}].link_target", f"[{cited}] links to {passages[cited]['source']!r} earlier "
                                                        "in the response: one marker, one page")
            continue
        passages.setdefault(cited, {"id": cited, "source": link, "text": ""})
    statements = dict_field(value.get("statements_to_citation_texts"), "statements_to_citation_texts", problems)
    annotation = dict_field(value.get("annotation"), "annotation", problems)
    judged = dict_field(annotation.get("statement_to_annotation"), "annotation.statement_to_annotation", problems)
    claims = []
    for statement, texts in statements.items():
        where = f"statements_to_citation_texts[{statement[:40]!r}]"
        cited_ids = []
        for j, text in enumerate(list_field(texts, where, problems)):
            cited = _marker(text, f"{where}[{j}]", problems)
            if cited is not None and cited not in cited_ids:
                cited_ids.append(cited)
                passages.setdefault(cited, {"id": cited, "source": "", "text": ""})
        claims.append(_claim(statement, cited_ids, judged.get(statement),
                             f"annotation.statement_to_annotation[{statement[:40]!r}]", problems))
    answer = {"question_id": stable_id("liu2023", query), "question": query, "answer": response,
              "passages": sorted(passages.values(), key=lambda p: (len(p["id"]), p["id"])), "claims": claims}
    return Draft(name, line, system or None, None if problems else answer, problems.issues)


def _claim(statement: str, cited_ids: list[str], annotation: Any, where: str, problems: Problems) -> dict[str, Any]:
    claim: dict[str, Any] = {"text": statement.strip(), "citations": [{"passage_id": c} for c in cited_ids]}
    if annotation is None:
        return claim
    annotation = dict_field(annotation, where, problems)
    worthy = annotation.get("statement_is_verification_worthy")
    if not isinstance(worthy, bool):
        problems.add(f"{where}.statement_is_verification_worthy", f"must be true or false, got {worthy!r}")
        return claim
    if not worthy:
        claim["factual"] = False
        return claim
    given = annotation.get("statement_supported")
    label = choice(given, f"{where}.statement_supported", problems, SUPPORTED) if cited_ids else "UNCITED"
    if label is not None:
        claim.update(label=label, justification=f"statement_supported: {given}", reviewer=DEFAULT_REVIEWER)
    by_id = {c["passage_id"]: c for c in claim["citations"]}
    for k, item in enumerate(list_field(annotation.get("citation_annotations"), f"{where}.citation_annotations",
                                        problems, required=False)):
        cwhere = f"{where}.citation_annotations[{k}]"
        item = dict_field(item, cwhere, problems)
        cited = _marker(item.get("citation_text"), f"{cwhere}.citation_text", problems)
        judgment = choice(item.get("citation_supports"), f"{cwhere}.citation_supports", problems, SUPPORTS)
        if cited is None or judgment is None:
            continue
        if cited not in by_id:
            problems.add(f"{cwhere}.citation_text", f"[{cited}] is not among the statement's citations")
            continue
        evidence = item.get("evidence")
        by_id[cited].update(judgment=judgment, evidence=evidence.strip() if isinstance(evidence, str) else "")
    return claim


def _marker(value: Any, field: str, problems: Problems) -> str | None:
    """``"[3]"`` → ``"3"``."""
    if not isinstance(value, str) or not value.strip().strip("[]").strip():
        problems.add(field, f"expected a citation text like '[1]', got {value!r}")
        return None
    return value.strip().strip("[]").strip()
