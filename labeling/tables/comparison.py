"""Run comparison, Django side (SPEC §5): reads both runs' frames, hands them to
``scoring.compare``, and shapes the result for the page, the command and the
xlsx download.

Reads only; a constant number of queries whatever the number of answers
(6 per run: claims, answers, labels, citations, answers with gold flags, gold
ids).
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ValidationError
from django.urls import NoReverseMatch, reverse

from labeling.exports import frames
from labeling.exports.cells import spreadsheet_text, text_cell
from labeling.exports.structure import one_version
from labeling.models import Run
from scoring.compare import DEFAULT_THRESHOLD, Comparison, RunFrames, compare_runs
from scoring.deltas import MetricDelta, format_delta
from scoring.intervals import DEFAULT_CONFIDENCE
from scoring.lazy import pd  # loaded on first use: keeps start-up fast (SPEC §7)
from scoring.ratio import format_value

# How many rows each list of the comparison page shows; the xlsx has them all.
PAGE_LIMIT = 200
NO_SHARED_QUESTIONS = "no_shared_questions"  # ValidationError code of run_comparison
_HYPHEN_MINUS = re.compile(r"(?<![\w.])-(?=\.?\d)")


def display_minus(text: str) -> str:
    """``text`` with each hyphen-minus that signs a number written as the
    typographic minus ``−`` (U+2212), the sign ``scoring.deltas.format_delta``
    gives deltas: the page shows one minus sign ("−0.12" beside "−0.18"). Files
    (JSON, xlsx, CSV) keep numbers and ``-``."""
    return _HYPHEN_MINUS.sub("\u2212", text)


def answer_review_url(*, project_slug: str, run_name: str, answer_id: Any) -> str:
    """URL of an answer's review page (``answer_review``).

    Falls back to the run page with an ``#answer-<id>`` anchor while the
    review page's URL is not routed.
    """
    try:
        return reverse(
            "answer_review", kwargs={"project_slug": project_slug, "run_name": run_name, "answer_id": answer_id}
        )
    except NoReverseMatch:
        run_url = reverse("run_detail", kwargs={"project_slug": project_slug, "run_name": run_name})
        return f"{run_url}#answer-{answer_id}"


@one_version()
def run_frames(run: Run) -> RunFrames:
    """The frames ``scoring.compare`` takes for ``run`` (``resolved_claims_frame``'s
    queries, citations, answers, judgments, gold ids: 11, 9 with the run's structure
    cached, ``labeling.exports.structure``).

    Claims carry the resolved label of ``labeling.exports.frames.resolved_claims_frame``;
    citations the id as cited, the passage's source and the fabricated flag;
    answers the gold flag; gold ids per answer.
    """
    claims, _disagreements = frames.resolved_claims_frame(run)
    citations = frames.citations_frame(run)
    answers = frames.answers_frame(run)
    judgments = frames.resolved_judgments_frame(run, citations)
    return RunFrames(
        name=run.name,
        claims=claims,
        citations=citations[["claim_id", "passage_id", "source", "fabricated"]],
        answers=answers[["answer_id", "question_id", "has_gold"]],
        gold_ids=frames.gold_ids_frame(run),
        # Only a run with judgments adds the judged precision to the comparison (SPEC §4.3b).
        judgments=judgments if judgments["judgment"].notna().any() else None,
    )


@dataclass(frozen=True)
class RunComparison:
    """Run B against run A of one project: the ``scoring.compare.Comparison``
    plus the runs, for links."""

    run_a: Run
    run_b: Run
    result: Comparison

    @property
    def project(self):
        return self.run_a.project

    def url_a(self, answer_id: Any) -> str:
        return answer_review_url(project_slug=self.project.slug, run_name=self.run_a.name, answer_id=answer_id)

    def url_b(self, answer_id: Any) -> str:
        return answer_review_url(project_slug=self.project.slug, run_name=self.run_b.name, answer_id=answer_id)

    def to_dict(self) -> dict[str, Any]:
        """``Comparison.to_dict(intervals=True)`` with ``project`` added: each summary
        entry carries its delta's paired interval and ``n_questions`` (SPEC §4.5)."""
        return {"project": self.project.slug, **self.result.to_dict(intervals=True)}

    def per_question_rows(self, limit: int | None = PAGE_LIMIT) -> list[dict[str, Any]]:
        """Per-question rows for the page: ids, links, ``cells`` (one (a text,
        b text, delta text, delta class) per metric, negatives with ``−``), and
        the diff counts."""
        table = self.result.per_question
        # Questions where anything moved come first (question order within each group).
        diffs = table[["label_flips", "citation_changes", "added", "removed"]].sum(axis=1) > 0
        deltas = table.filter(like="_delta").apply(pd.to_numeric).fillna(0).ne(0).any(axis=1)
        table = table.iloc[(~(diffs | deltas)).argsort(kind="stable")]
        if limit is not None:
            table = table.head(limit)
        metrics = ["coverage", "support", "gap"] + (["precision", "recall"] if self.result.has_gold else [])
        rows = []
        for record in table.to_dict("records"):
            rows.append({
                "question_id": record["question_id"],
                "url_a": self.url_a(record["answer_id_a"]),
                "url_b": self.url_b(record["answer_id_b"]),
                "claims_a": record["claims_a"],
                "claims_b": record["claims_b"],
                "cells": [
                    (display_minus(format_value(record[f"{m}_a"])), display_minus(format_value(record[f"{m}_b"])),
                     format_delta(record[f"{m}_delta"]), delta_class(m, record[f"{m}_delta"]))
                    for m in metrics
                ],
                "label_flips": record["label_flips"],
                "citation_changes": record["citation_changes"],
                "added": record["added"],
                "removed": record["removed"],
            })
        return rows

    def claim_rows(self, section: str, limit: int | None = PAGE_LIMIT) -> list[dict[str, Any]]:
        """Rows of ``label_flips``, ``citation_changes``, ``added`` or
        ``removed`` as dicts with links ``url_a``/``url_b`` ("" on the absent side)."""
        frame: pd.DataFrame = getattr(self.result, section)
        if limit is not None:
            frame = frame.head(limit)
        rows = []
        for record in frame.to_dict("records"):
            record = {key: _clean(value) for key, value in record.items()}
            record["url_a"] = self.url_a(record["answer_id_a"]) if record.get("answer_id_a") is not None else ""
            record["url_b"] = self.url_b(record["answer_id_b"]) if record.get("answer_id_b") is not None else ""
            record["text_changed"] = (
                record.get("claim_a") is not None and record.get("claim_b") is not None
                and record["claim_a"] != record["claim_b"]
            )
            rows.append(record)
        return rows

    def scatter_rows(self, side: str) -> list[dict[str, Any]]:
        """Per-answer rows of run ``side`` ("a"/"b") over the shared questions, in
        the shape ``labeling.scores.charts.scatter_chart`` takes."""
        rows = []
        for record in self.result.per_question.to_dict("records"):
            rows.append({
                "question_id": record["question_id"],
                "answer_id": record[f"answer_id_{side}"],
                "coverage": record[f"coverage_{side}"],
                "support": record[f"support_{side}"],
                "claims": record[f"claims_{side}"],
                "cited": record[f"cited_{side}"],
                "pending": record[f"pending_{side}"],
            })
        return rows


def run_comparison(*, run_a: Run, run_b: Run, threshold: float = DEFAULT_THRESHOLD,
                   confidence: float = DEFAULT_CONFIDENCE) -> RunComparison:
    """Compare ``run_b`` against ``run_a`` on the questions both answered (SPEC §5),
    each delta with its paired interval at ``confidence`` (SPEC §4.5).

    ``threshold``: fuzzy claim alignment similarity in (0, 1] (see
    ``scoring.compare``). 16 queries (``run_frames`` of each run). Raises
    ValidationError when the runs are the same run, belong to different
    projects, the threshold or the level is out of range, and (code
    ``NO_SHARED_QUESTIONS``) when they answer no question in common: there is
    nothing to compare, and empty tables would read as "no change".
    """
    if run_a.pk == run_b.pk:
        raise ValidationError("Choose two different runs to compare.")
    if run_a.project_id != run_b.project_id:
        raise ValidationError(
            f"Runs {run_a.name!r} and {run_b.name!r} belong to different projects; compare runs of one project."
        )
    if not 0 < threshold <= 1:
        raise ValidationError(f"The alignment threshold must be above 0 and at most 1, not {threshold}.")
    if not 0 < confidence < 1:
        raise ValidationError(f"The confidence level must be between 0 and 1, not {confidence}.")
    result = compare_runs(run_frames(run_a), run_frames(run_b), threshold=threshold, confidence=confidence)
    if not result.shared_questions:
        def answered(count: int) -> str:
            return f"{count} question{'' if count == 1 else 's'}"

        raise ValidationError(
            "Runs A and B answer no question in common: nothing to compare (runs are compared on the "
            f"questions both answered). A ({run_a.name}) answered {answered(len(result.only_a))}, "
            f"B ({run_b.name}) {answered(len(result.only_b))}.",
            code=NO_SHARED_QUESTIONS,
        )
    return RunComparison(run_a=run_a, run_b=run_b, result=result)


# --- xlsx -----------------------------------------------------------------

def comparison_xlsx(comparison: RunComparison) -> bytes:
    """The whole comparison as an xlsx workbook (bytes).

    Sheets: ``Summary`` (metric, A, B, delta B − A), ``Per question``,
    ``Label flips``, ``Citation changes``, ``Added claims``, ``Removed claims``
    (every row, no page limit). Numbers are numeric cells, undefined values
    empty cells; text goes through ``labeling.exports.cells.text_cell``
    (control characters, length, formulas written as text; SPEC §7).
    """
    # openpyxl (1 s to import) loads only when a workbook is written
    from openpyxl import Workbook
    from openpyxl.cell import WriteOnlyCell
    from openpyxl.styles import Font

    result = comparison.result
    workbook = Workbook(write_only=True)
    bold = Font(bold=True)

    def sheet(title: str, header: list[str], rows: Iterable[list[Any]]) -> None:
        worksheet = workbook.create_sheet(title)
        worksheet.freeze_panes = "A2"
        header_cells = []
        for name in header:
            cell = WriteOnlyCell(worksheet, value=spreadsheet_text(name))
            cell.font = bold
            header_cells.append(cell)
        worksheet.append(header_cells)
        for row in rows:
            worksheet.append([_cell(worksheet, value) for value in row])

    a, b = comparison.run_a.name, comparison.run_b.name
    level = interval_label(result.confidence)
    sheet(
        "Summary",
        ["metric", f"A: {a}", f"B: {b}", "delta (B − A)", f"A: {a} (counts)", f"B: {b} (counts)"],
        [[row.label, row.a, row.b, row.delta, row.a_text, row.b_text] for row in result.summary]
        + [[], ["project", comparison.project.slug], ["shared questions", len(result.shared_questions)],
           ["questions only in A", len(result.only_a)], ["questions only in B", len(result.only_b)],
           ["alignment threshold", result.threshold]]
        + [[name.replace("_", " "), count] for name, count in result.counts().items()]
        # SPEC §4.5: each delta with its paired interval, below the table the columns above keep.
        + [[], [f"delta (B − A) with its {level}, paired by question"],
           ["metric", "delta (B − A)", "ci_low", "ci_high", "questions", "verdict"]]
        + [[row.label, row.delta, *_bounds(row), row.difference.n_questions if row.difference else 0,
            noise_verdict(row)] for row in result.summary],
    )
    per_question = result.per_question
    sheet("Per question", list(per_question.columns), per_question.itertuples(index=False, name=None))
    claim_columns = {
        "label_flips": ("Label flips", ["question_id", "claim_index_a", "claim_a", "label_a", "claim_index_b",
                                        "claim_b", "label_b", "match", "similarity"]),
        "citation_changes": ("Citation changes", ["question_id", "change", "claim_index_a", "claim_a",
                                                  "n_citations_a", "claim_index_b", "claim_b", "n_citations_b",
                                                  "sources_lost", "sources_gained", "label_a", "label_b"]),
        "added": ("Added claims", ["question_id", "claim_index_b", "claim_b", "label_b", "n_citations_b"]),
        "removed": ("Removed claims", ["question_id", "claim_index_a", "claim_a", "label_a", "n_citations_a"]),
    }
    for attr, (title, columns) in claim_columns.items():
        frame = getattr(result, attr)
        sheet(title, columns, frame.reindex(columns=columns).itertuples(index=False, name=None))
    buffer = io.BytesIO()
    workbook.save(buffer)
    return buffer.getvalue()


def _bounds(row: MetricDelta) -> list[float | None]:
    difference = row.difference
    return [difference.low, difference.high] if difference is not None and difference.defined else [None, None]


def _cell(worksheet, value: Any) -> Any:
    value = _clean(value)
    if isinstance(value, tuple | list):
        value = "; ".join(str(item) for item in value)
    if isinstance(value, str):
        return text_cell(worksheet, value)
    return value


def _clean(value: Any) -> Any:
    """A DataFrame cell as a plain value: NaN/NA → None, numpy scalars unwrapped."""
    if isinstance(value, tuple | list):
        return value
    if value is None or value is pd.NA:
        return None
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and value != value:
        return None
    return value


def noise_verdict(row: MetricDelta) -> str:
    """Whether the change of ``row`` is distinguishable from noise, in words (the
    comparison page and table): from the paired interval of B − A (SPEC §4.5)."""
    difference = row.difference
    if row.delta is None:
        return "undefined in a run"
    if difference is None or not difference.defined:
        return "too few questions to tell (an interval needs two)"
    if difference.low > 0:
        return "beyond noise: higher in B"
    if difference.high < 0:
        return "beyond noise: lower in B"
    if difference.low == difference.high == 0:
        return "no change on any question"
    return "within noise"


def interval_label(confidence: float) -> str:
    """The column title of the deltas' interval: ``"95% interval"``."""
    return f"{format_value(confidence * 100, 0)}% interval"


def delta_class(metric: str, delta: Any) -> str:
    """``better``/``worse``/``changed``/``same``/``none``: how to shade a delta
    cell. Higher coverage, support, precision and recall are better; a gap
    change is only ``changed`` (it narrows both when support rises and when
    coverage falls)."""
    delta = _clean(delta)
    if delta is None:
        return "none"
    if delta == 0:
        return "same"
    if metric.endswith("gap"):
        # A narrower gap is good only when support rose, not when coverage fell: no colour.
        return "changed"
    return "better" if delta > 0 else "worse"
