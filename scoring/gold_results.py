"""The results of the passage-level (context) and source-level metrics against gold
(SPEC §4.3, seed "RAG Citation Quality"): what :func:`scoring.gold.gold_metrics` and
:func:`scoring.gold.answer_gold_matches` return. Definitions and decisions: the
docstring of :mod:`scoring.gold`."""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from scoring.claims import frame_units, frame_values, native_records
from scoring.intervals import AnswerValues, Units
from scoring.lazy import pd  # loaded on first use: keeps start-up fast (SPEC §7)
from scoring.matching import Verdict
from scoring.ratio import Ratio


@dataclass(frozen=True)
class SourceMetrics:
    """Source-level precision/recall/F1 (SPEC §4.3).

    Pooled over the ``answers`` with expected sources: ``precision`` = cited
    sources that are expected / cited sources, ``recall`` = expected sources
    that are cited / expected sources (distinct sources per answer), as
    :class:`~scoring.ratio.Ratio` (value in [0, 1], ``None`` on 0/0); ``f1``
    from the pooled values. ``mean_*`` average the defined per-answer values
    (``None`` if none is); ``*_skipped`` count the answers whose value is
    undefined.
    """

    precision: Ratio
    recall: Ratio
    f1: float | None
    mean_precision: float | None
    mean_recall: float | None
    mean_f1: float | None
    precision_skipped: int
    recall_skipped: int
    f1_skipped: int
    answers: int

    # to_dict names of precision's and recall's numerator and denominator
    COUNT_KEYS: ClassVar[tuple[str, str, str, str]] = (
        "matched_cited_sources", "cited_sources", "matched_expected_sources", "expected_sources"
    )  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready figures: floats in [0, 1] or ``None`` (never NaN), ints."""
        p_num, p_den, r_num, r_den = self.COUNT_KEYS
        return {
            "precision": self.precision.value,
            "recall": self.recall.value,
            "f1": self.f1,
            "mean_precision": self.mean_precision,
            "mean_recall": self.mean_recall,
            "mean_f1": self.mean_f1,
            p_num: self.precision.numerator,
            p_den: self.precision.denominator,
            r_num: self.recall.numerator,
            r_den: self.recall.denominator,
            "answers": self.answers,
        }


@dataclass(frozen=True)
class ContextMetrics(SourceMetrics):
    """Context (passage-level) precision/recall/F1 (SPEC §4.3), fields as in
    :class:`SourceMetrics` with ``precision`` = matched citations / citations and
    ``recall`` = matched references / references, pooled over the ``answers``
    scored (with gold references, not pending). ``pending`` answers (the
    matcher could not decide) are in none of these; their ids are
    ``pending_answer_ids``.
    """

    pending: int = 0
    pending_answer_ids: tuple[Hashable, ...] = ()

    COUNT_KEYS: ClassVar[tuple[str, str, str, str]] = (
        "matched_citations", "citations", "matched_references", "references"
    )  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready figures: floats in [0, 1] or ``None`` (never NaN), ints."""
        return {**super().to_dict(), "pending": self.pending}


@dataclass(frozen=True)
class GoldMetrics:
    """Gold-based citation metrics of a set of answers (SPEC §4.3).

    ``per_answer``: one row per answer, sorted by ``question_id`` then
    ``answer_id``: ``answer_id, question_id, has_references,
    has_expected_sources, context_pending`` (bool); ``citations, references``
    (distinct, ``Int64``, NA without gold references), ``matched_citations,
    matched_references`` (``Int64``, NA also when pending);
    ``context_precision, context_recall, context_f1`` (float or ``None``,
    object); ``cited_sources, matched_cited_sources, expected_sources,
    matched_expected_sources`` (``Int64``, NA without expected sources);
    ``source_precision, source_recall, source_f1`` (float or ``None``).
    """

    context: ContextMetrics
    source: SourceMetrics
    per_answer: pd.DataFrame = field(repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """``{"context": {...}, "source": {...}}`` as in the two ``to_dict``."""
        return {"context": self.context.to_dict(), "source": self.source.to_dict()}

    def per_answer_records(self) -> list[dict[str, Any]]:
        """``per_answer`` as JSON-ready dicts (``pd.NA``/NaN as ``None``)."""
        return native_records(self.per_answer)

    def units(self) -> dict[str, Units]:
        """Per-answer units of the pooled (micro) figures (SPEC §4.5):
        ``context_precision`` (matched / distinct citations), ``context_recall``
        (matched / distinct references) over the scored answers (with references,
        not pending), ``source_precision`` and ``source_recall`` over the answers
        with expected sources."""
        frame = self.per_answer
        scored = (frame["has_references"] & ~frame["context_pending"]).to_numpy(dtype=bool)
        sourced = frame["has_expected_sources"].to_numpy(dtype=bool)
        return {
            "context_precision": frame_units(frame, "matched_citations", "citations", rows=scored),
            "context_recall": frame_units(frame, "matched_references", "references", rows=scored),
            "source_precision": frame_units(frame, "matched_cited_sources", "cited_sources", rows=sourced),
            "source_recall": frame_units(frame, "matched_expected_sources", "expected_sources", rows=sourced),
        }

    def answer_values(self) -> dict[str, AnswerValues]:
        """Per-answer context and source precision, recall and F1 (``None`` where
        undefined), over the answers each mean is taken on."""
        frame = self.per_answer
        scored = (frame["has_references"] & ~frame["context_pending"]).to_numpy(dtype=bool)
        sourced = frame["has_expected_sources"].to_numpy(dtype=bool)
        values = {}
        for level, rows in (("context", scored), ("source", sourced)):
            for metric in ("precision", "recall", "f1"):
                values[f"{level}_{metric}"] = frame_values(frame, f"{level}_{metric}", rows=rows)
        return values


@dataclass(frozen=True)
class CitationMatch:
    """One citation of an answer against its gold references.

    ``matched``: ``True`` if it matches some reference, ``False`` if it matches
    none, ``None`` if no match is known and the matcher could not decide for
    some pair. ``reference_ids``: the references it matches. ``duplicate_of``:
    the ``citation_id`` of the identical citation counted in its place, or
    ``None`` (it inherits that citation's verdicts).
    """

    citation_id: Hashable
    source: str
    text: str
    matched: Verdict
    reference_ids: tuple[Hashable, ...]
    duplicate_of: Hashable | None


@dataclass(frozen=True)
class ReferenceMatch:
    """One gold reference of an answer: ``matched`` as in :class:`CitationMatch`;
    ``citation_ids``: the citations (duplicates included) that match it."""

    reference_id: Hashable
    source: str
    text: str
    matched: Verdict
    citation_ids: tuple[Hashable, ...]
    duplicate_of: Hashable | None


@dataclass(frozen=True)
class AnswerGoldMatches:
    """Which citations of one answer matched which gold references, in input
    order, for the review page (SPEC §4.3). ``pending``: the matcher left some
    pair undecided, so the answer's context metrics are pending."""

    citations: tuple[CitationMatch, ...]
    references: tuple[ReferenceMatch, ...]
    pending: bool
