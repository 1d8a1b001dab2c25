"""Passage-level (context) and source-level precision/recall/F1 against gold
references and expected sources (SPEC §4.3, seed "RAG Citation Quality").

Input frames:

- ``answers``: one row per answer, ``answer_id`` (hashable, unique),
  ``question_id``, ``has_references`` (bool: the question carries gold
  reference passages, possibly an empty list), ``has_expected_sources`` (bool:
  it carries expected sources, possibly an empty list).
- ``citations``: one row per response citation, ``answer_id``, ``citation_id``
  (unique over the frame), ``source`` (str, may be ``""``), ``text`` (the cited
  span if given, else the passage text; ``""`` for a fabricated citation whose
  passage was never sent).
- ``references``: one row per gold reference passage of each answer's question
  (repeated for every answer of it), ``answer_id``, ``source``, ``text``
  (``""`` = matched by any citation of the same source); optional
  ``reference_id`` naming it (else its row label in the frame).
- ``expected_sources``: ``answer_id``, ``source``.

Null ``source``/``text`` cells read as ``""``. Per answer, with ``C`` its
citations, ``R`` its references, ``S`` the set of cited sources and ``E`` the
set of expected sources (sources compared through
:func:`~scoring.normalize.normalize_source`, blank ones dropped):

- context recall = |{r ∈ R : some c ∈ C matches r}| / |R|
- context precision = |{c ∈ C : c matches some r ∈ R}| / |C|
- source recall = |E ∩ S| / |E|; source precision = |S ∩ E| / |S|
- F1 = harmonic mean (:func:`scoring.ratio.f1`): ``None`` if either side is.

A citation matches a reference when their sources are equal (when both have
one) and the passages match under the matcher (:mod:`scoring.matching`); a
reference with an empty passage is matched by any citation of the same source
(and, lacking a source too, by nothing); a citation with an empty passage
matches no reference with a passage. Only pairs whose sources agree (or where
a side has none) go to the matcher.

Decisions the SPEC leaves open, made to agree with the doc-id metrics (SPEC
§4.2: "ids are compared as de-duplicated sets"):

- Duplicates: citations of one answer with the same (normalized source,
  normalized text) are one citation, counted once in ``C``; likewise identical
  references in ``R``. The kept citation is the one with the smallest
  ``citation_id`` (as text), so row order never changes a result.
- Pending: an answer for which the matcher returned ``None`` on any pair it was
  asked is *pending*: left out of every context count and mean, and counted in
  ``pending`` — never scored as a match or a miss. Source metrics need no
  matcher and are never pending.
- Scope: an answer without gold references (``has_references`` False) is left
  out of the context metrics; with an empty list, it has recall ``None`` and
  precision 0 (every citation is wrong) or ``None`` when it cites nothing.
  Sources likewise with ``has_expected_sources``.
"""

from __future__ import annotations

import inspect
import math
from collections import defaultdict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

from scoring.claims import mean_of_defined
from scoring.gold_results import (  # noqa: F401 (re-exported: callers import them from here)
    AnswerGoldMatches,
    CitationMatch,
    ContextMetrics,
    GoldMetrics,
    ReferenceMatch,
    SourceMetrics,
)
from scoring.labels import require_columns, sort_by
from scoring.lazy import np, pd  # loaded on first use: keeps start-up fast (SPEC §7)
from scoring.matching import Matcher, Verdict
from scoring.normalize import normalize_source, normalize_text
from scoring.ratio import Ratio, f1

# A string: evaluating ``pd.Series`` here would import pandas with the module.
Column = "pd.Series | list[Any]"

ANSWER_COLUMNS = ("answer_id", "question_id", "has_references", "has_expected_sources")
CITATION_COLUMNS = ("answer_id", "citation_id", "source", "text")
REFERENCE_COLUMNS = ("answer_id", "source", "text")
EXPECTED_SOURCE_COLUMNS = ("answer_id", "source")


# --- per-answer plan ---------------------------------------------------------


@dataclass
class _Item:
    """A citation or a reference, ready for matching."""

    id: Hashable
    source: str  # as given
    text: str  # as given: the matcher sees the original passage
    source_key: str  # normalize_source(source)
    text_key: str  # normalize_text(text)
    duplicate_of: Hashable | None = None  # id of the item counted in its place
    kept: int = -1  # position of the item counted for it (its own when not a duplicate)


@dataclass
class _Plan:
    """One answer's de-duplicated citations and references, and the verdict of
    each compatible (citation, reference) pair: a bool fixed by the source
    rules, or the index of the passage pair the matcher is asked about."""

    citations: list[_Item]
    references: list[_Item]
    distinct_citations: list[int]
    distinct_references: list[int]
    cells: list[tuple[int, int, bool | int]]  # (citation i, reference j, verdict | pair)

    def resolve(self, verdicts: Sequence[Verdict]) -> dict[tuple[int, int], Verdict]:
        return {
            (i, j): cell if isinstance(cell, bool) else verdicts[cell]
            for i, j, cell in self.cells
        }


class _PairBook:
    """Distinct (cited text, reference text) pairs to ask the matcher, with a
    key each (``"<citation_id>|<reference_id>"``) for matchers that report by key."""

    def __init__(self) -> None:
        self.index: dict[tuple[str, str], int] = {}
        self.keys: list[str] = []

    def ask(self, citation: _Item, reference: _Item) -> int:
        pair = (citation.text, reference.text)
        if pair not in self.index:
            self.index[pair] = len(self.keys)
            self.keys.append(f"{citation.id}|{reference.id}")
        return self.index[pair]

    def run(self, matcher: Matcher) -> list[Verdict]:
        return _match_many(matcher, list(self.index), self.keys)


def _dedupe(items: list[_Item], order_key: Any) -> list[int]:
    """Mark repeats of the same (source, text) key; returns the kept positions.
    The kept one is the first by ``order_key``, whatever the input order."""
    kept: dict[tuple[str, str], int] = {}
    for pos in sorted(range(len(items)), key=lambda pos: order_key(items[pos])):
        item = items[pos]
        item.kept = kept.setdefault((item.source_key, item.text_key), pos)
        if item.kept != pos:
            item.duplicate_of = items[item.kept].id
    return [pos for pos, item in enumerate(items) if item.kept == pos]


def _rule(citation: _Item, reference: _Item) -> bool | None:
    """The verdict fixed without the matcher, or ``None`` = ask it."""
    if citation.source_key and reference.source_key and citation.source_key != reference.source_key:
        return False
    if not reference.text_key:
        # SPEC §4.3: an empty reference passage is matched by any citation of the same source
        return bool(reference.source_key) and citation.source_key == reference.source_key
    if not citation.text_key:
        return False
    return None


def _plan(citations: list[_Item], references: list[_Item], book: _PairBook) -> _Plan:
    distinct_c = _dedupe(citations, order_key=lambda item: (str(item.id), item.text))
    distinct_r = _dedupe(references, order_key=lambda item: (item.source, item.text))
    cells: list[tuple[int, int, bool | int]] = []
    for i in distinct_c:
        for j in distinct_r:
            verdict = _rule(citations[i], references[j])
            if verdict is None:
                cells.append((i, j, book.ask(citations[i], references[j])))
            elif verdict:
                cells.append((i, j, True))
    return _Plan(citations, references, distinct_c, distinct_r, cells)


def _match_many(matcher: Matcher, pairs: list[tuple[str, str]], keys: list[str]) -> list[Verdict]:
    """``matcher.match_many`` with ``keys`` when it takes them; checks the answer.

    Raises ``ValueError`` when the matcher returns a different number of
    verdicts than pairs.
    """
    if not pairs:
        return []
    parameters = inspect.signature(matcher.match_many).parameters
    takes_keys = "keys" in parameters or any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()
    )
    verdicts = matcher.match_many(pairs, keys=keys) if takes_keys else matcher.match_many(pairs)
    verdicts = list(verdicts)
    if len(verdicts) != len(pairs):
        raise ValueError(f"{matcher!r} returned {len(verdicts)} verdicts for {len(pairs)} pairs")
    return [None if verdict is None else bool(verdict) for verdict in verdicts]


def _text(value: Any) -> str:
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return ""
    return str(value)


def _items(ids: Column, sources: Column, texts: Column) -> list[_Item]:
    items = []
    # a run cites few distinct sources many times, and a reference recurs for
    # every answer of its question
    source_keys: dict[str, str] = {}
    text_keys: dict[str, str] = {}
    # plain lists: iterating a Series goes through pandas for every cell
    ids, sources, texts = (list(column) if isinstance(column, list) else column.tolist()
                           for column in (ids, sources, texts))
    for item_id, source, text in zip(ids, sources, texts, strict=True):
        source, text = _text(source), _text(text)
        if source not in source_keys:
            source_keys[source] = normalize_source(source)
        if text not in text_keys:
            text_keys[text] = normalize_text(text)
        items.append(_Item(item_id, source, text, source_keys[source], text_keys[text]))
    return items


def _reference_ids(references: pd.DataFrame) -> list[Hashable]:
    if "reference_id" in references.columns:
        return references["reference_id"].tolist()
    return references.index.tolist()


# --- public functions --------------------------------------------------------


def gold_metrics(
    answers: pd.DataFrame,
    citations: pd.DataFrame,
    references: pd.DataFrame,
    expected_sources: pd.DataFrame,
    *,
    matcher: Matcher,
) -> GoldMetrics:
    """Context and source precision/recall/F1, pooled and per-answer mean
    (SPEC §4.3, seed "RAG Citation Quality"; pooling and means SPEC §4).

    Frames, match rule, duplicates, pending and scope as in the module
    docstring; ``matcher`` from :func:`scoring.matching.get_matcher`, asked
    once (one ``match_many`` call) about the distinct passage pairs whose
    sources agree. Out: :class:`GoldMetrics`.

    Raises ``ValueError`` on a missing column, a duplicated ``answer_id`` or
    ``citation_id``, a null ``citation_id``, a row for an answer not in
    ``answers``, gold references (expected sources) on an answer whose
    ``has_references`` (``has_expected_sources``) is False, or a matcher that
    returns the wrong number of verdicts.
    """
    require_columns(answers, ANSWER_COLUMNS, name="answers")
    require_columns(citations, CITATION_COLUMNS, name="citations")
    require_columns(references, REFERENCE_COLUMNS, name="references")
    require_columns(expected_sources, EXPECTED_SOURCE_COLUMNS, name="expected_sources")
    _check_ids(answers, "answer_id", name="answers")
    _check_ids(citations, "citation_id", name="citations")
    for frame, name in (
        (citations, "citations"),
        (references, "references"),
        (expected_sources, "expected_sources"),
    ):
        _check_known(frame, answers, name=name)
    has_references = _flag(answers["has_references"])
    has_expected = _flag(answers["has_expected_sources"])
    _check_scope(references, answers["answer_id"][~has_references], name="references",
                 flag="has_references")
    _check_scope(expected_sources, answers["answer_id"][~has_expected], name="expected_sources",
                 flag="has_expected_sources")

    citations_of = _grouped(
        citations["answer_id"],
        _items(citations["citation_id"], citations["source"], citations["text"]),
    )
    references_of = _grouped(
        references["answer_id"],
        _items(_reference_ids(references), references["source"], references["text"]),
    )
    expected_of: dict[Hashable, set[str]] = defaultdict(set)
    for item in _items(expected_sources["answer_id"], expected_sources["source"],
                       [""] * len(expected_sources)):
        if item.source_key:
            expected_of[item.id].add(item.source_key)

    answer_ids = answers["answer_id"].tolist()
    book = _PairBook()
    plans = {
        answer_id: _plan(citations_of.get(answer_id, []), references_of.get(answer_id, []), book)
        for answer_id, scoped in zip(answer_ids, has_references, strict=True)
        if scoped
    }
    verdicts = book.run(matcher)

    rows = []
    for answer_id, question_id, scoped_r, scoped_e in zip(
        answer_ids, answers["question_id"].tolist(), has_references, has_expected, strict=True
    ):
        row: dict[str, Any] = {
            "answer_id": answer_id,
            "question_id": question_id,
            "has_references": bool(scoped_r),
            "has_expected_sources": bool(scoped_e),
        }
        row.update(_context_row(plans[answer_id], verdicts) if scoped_r else _EMPTY_CONTEXT)
        cited = {item.source_key for item in citations_of.get(answer_id, []) if item.source_key}
        row.update(_source_row(cited, expected_of.get(answer_id, set())) if scoped_e
                   else _EMPTY_SOURCE)
        rows.append(row)
    per_answer = sort_by(_per_answer_frame(rows), ["question_id", "answer_id"])

    scored = per_answer[per_answer["has_references"] & ~per_answer["context_pending"]]
    pending_ids = per_answer.loc[per_answer["context_pending"], "answer_id"].tolist()
    with_sources = per_answer[per_answer["has_expected_sources"]]
    context = ContextMetrics(
        **_pooled(scored, "matched_citations", "citations", "matched_references", "references"),
        **_means(scored, "context"),
        answers=len(scored),
        pending=len(pending_ids),
        pending_answer_ids=tuple(pending_ids),
    )
    source = SourceMetrics(
        **_pooled(with_sources, "matched_cited_sources", "cited_sources",
                  "matched_expected_sources", "expected_sources"),
        **_means(with_sources, "source"),
        answers=len(with_sources),
    )
    return GoldMetrics(context=context, source=source, per_answer=per_answer)


def answer_gold_matches(
    citations: pd.DataFrame, references: pd.DataFrame, *, matcher: Matcher
) -> AnswerGoldMatches:
    """Which citations of ONE answer match which of its gold references, for the
    review page (same rules as :func:`gold_metrics`, SPEC §4.3).

    In: ``citations`` with ``citation_id, source, text`` and ``references``
    with ``source, text`` (optional ``reference_id``, else the row label),
    both already limited to the answer (an ``answer_id`` column is ignored).
    Out: :class:`AnswerGoldMatches`, citations and references in input order.

    Raises ``ValueError`` on a missing column, a duplicated or null
    ``citation_id``, or a matcher that returns the wrong number of verdicts.
    """
    require_columns(citations, ("citation_id", "source", "text"), name="citations")
    require_columns(references, ("source", "text"), name="references")
    _check_ids(citations, "citation_id", name="citations")
    cited = _items(citations["citation_id"], citations["source"], citations["text"])
    gold = _items(_reference_ids(references), references["source"], references["text"])
    book = _PairBook()
    plan = _plan(cited, gold, book)
    cells = plan.resolve(book.run(matcher))

    def combined(found: list[Verdict]) -> Verdict:
        return True if any(found) else (None if None in found else False)

    citation_matches = [
        CitationMatch(
            item.id, item.source, item.text,
            combined([cells.get((item.kept, j), False) for j in plan.distinct_references]),
            tuple(ref.id for ref in gold if cells.get((item.kept, ref.kept)) is True),
            item.duplicate_of,
        )
        for item in cited
    ]  # fmt: skip
    reference_matches = [
        ReferenceMatch(
            ref.id, ref.source, ref.text,
            combined([cells.get((i, ref.kept), False) for i in plan.distinct_citations]),
            tuple(item.id for item in cited if cells.get((item.kept, ref.kept)) is True),
            ref.duplicate_of,
        )
        for ref in gold
    ]  # fmt: skip
    return AnswerGoldMatches(
        citations=tuple(citation_matches),
        references=tuple(reference_matches),
        pending=any(verdict is None for verdict in cells.values()),
    )


# --- helpers -----------------------------------------------------------------

_CONTEXT_COLUMNS = (
    "citations", "matched_citations", "references", "matched_references",
    "context_precision", "context_recall", "context_f1",
)  # fmt: skip
_SOURCE_COLUMNS = (
    "cited_sources", "matched_cited_sources", "expected_sources", "matched_expected_sources",
    "source_precision", "source_recall", "source_f1",
)  # fmt: skip
_FLAG_COLUMNS = ("has_references", "has_expected_sources", "context_pending")
_EMPTY_CONTEXT: dict[str, Any] = {"context_pending": False, **dict.fromkeys(_CONTEXT_COLUMNS)}
_EMPTY_SOURCE: dict[str, Any] = dict.fromkeys(_SOURCE_COLUMNS)


def _context_row(plan: _Plan, verdicts: Sequence[Verdict]) -> dict[str, Any]:
    cells = plan.resolve(verdicts)
    n_citations, n_references = len(plan.distinct_citations), len(plan.distinct_references)
    if any(verdict is None for verdict in cells.values()):
        return {
            **_EMPTY_CONTEXT,
            "context_pending": True,
            "citations": n_citations,
            "references": n_references,
        }
    matched = [(i, j) for (i, j), verdict in cells.items() if verdict]
    matched_citations = len({i for i, _ in matched})
    matched_references = len({j for _, j in matched})
    precision = Ratio(matched_citations, n_citations).value
    recall = Ratio(matched_references, n_references).value
    return {
        "context_pending": False,
        "citations": n_citations,
        "matched_citations": matched_citations,
        "references": n_references,
        "matched_references": matched_references,
        "context_precision": precision,
        "context_recall": recall,
        "context_f1": f1(precision, recall),
    }


def _source_row(cited: set[str], expected: set[str]) -> dict[str, Any]:
    both = len(cited & expected)
    precision = Ratio(both, len(cited)).value
    recall = Ratio(both, len(expected)).value
    return {
        "cited_sources": len(cited),
        "matched_cited_sources": both,
        "expected_sources": len(expected),
        "matched_expected_sources": both,
        "source_precision": precision,
        "source_recall": recall,
        "source_f1": f1(precision, recall),
    }


def _per_answer_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    columns = ["answer_id", "question_id", *_FLAG_COLUMNS, *_CONTEXT_COLUMNS, *_SOURCE_COLUMNS]
    data: dict[str, Any] = {}
    for column in columns:
        values = [row[column] for row in rows]
        if column in _FLAG_COLUMNS:
            data[column] = np.array(values, dtype=bool)
        elif column in ("answer_id", "question_id") or column.endswith(("_precision", "_recall",
                                                                           "_f1")):
            # object dtype keeps None as None: an undefined ratio never turns into NaN
            data[column] = pd.Series(values, dtype=object)
        else:
            data[column] = pd.array([pd.NA if v is None else v for v in values], dtype="Int64")
    return pd.DataFrame(data, columns=columns)


def _pooled(
    frame: pd.DataFrame, p_num: str, p_den: str, r_num: str, r_den: str
) -> dict[str, Any]:
    def total(column: str) -> int:
        return int(frame[column].sum())

    precision = Ratio(total(p_num), total(p_den))
    recall = Ratio(total(r_num), total(r_den))
    return {"precision": precision, "recall": recall, "f1": f1(precision.value, recall.value)}


def _means(frame: pd.DataFrame, prefix: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for metric in ("precision", "recall", "f1"):
        mean, skipped = mean_of_defined(frame[f"{prefix}_{metric}"])
        out[f"mean_{metric}"] = mean
        out[f"{metric}_skipped"] = skipped
    return out


def _grouped(answer_ids: pd.Series, items: list[_Item]) -> dict[Hashable, list[_Item]]:
    grouped: dict[Hashable, list[_Item]] = defaultdict(list)
    for answer_id, item in zip(answer_ids.tolist(), items, strict=True):
        grouped[answer_id].append(item)
    return grouped


def _flag(values: pd.Series) -> np.ndarray:
    """A bool column as a numpy bool array, null read as False."""
    return values.astype("boolean").fillna(False).to_numpy(dtype=bool)


def _check_ids(frame: pd.DataFrame, column: str, *, name: str) -> None:
    if frame[column].isna().any():
        raise ValueError(f"{name} frame has row(s) without a {column}")
    twice = frame[column].duplicated()
    if twice.any():
        shown = ", ".join(repr(v) for v in frame.loc[twice, column].unique()[:5])
        raise ValueError(f"{name} frame lists {column}(s) more than once: {shown}")


def _check_known(frame: pd.DataFrame, answers: pd.DataFrame, *, name: str) -> None:
    unknown = ~frame["answer_id"].isin(answers["answer_id"])
    if unknown.any():
        shown = ", ".join(repr(a) for a in frame.loc[unknown, "answer_id"].unique()[:5])
        raise ValueError(f"{name} frame has rows for answer(s) not in answers: {shown}")


def _check_scope(frame: pd.DataFrame, out_of_scope: pd.Series, *, name: str, flag: str) -> None:
    stray = frame["answer_id"].isin(out_of_scope)
    if stray.any():
        shown = ", ".join(repr(a) for a in frame.loc[stray, "answer_id"].unique()[:5])
        raise ValueError(f"{name} frame has rows for answer(s) whose {flag} is False: {shown}")
