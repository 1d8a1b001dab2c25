"""What the label table workbook holds and how it looks, for both of its
writers (``labeling.exports.xlsx_turbo``, ``labeling.exports.xlsx_openpyxl``):
the sheets' columns, widths, wrapped columns, the label colours, and the
values of the Answers and Summary sheets. See ``labeling.exports.xlsx``."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from labeling.exports.label_table import INT_COLUMNS, LABEL_TABLE_COLUMNS
from scoring.claims import ClaimMetrics
from scoring.figures import run_figures, run_intervals
from scoring.labels import LABEL_VALUES, SUPPORTED, UNCITED, UNSUPPORTED
from scoring.ratio import Ratio, format_value

LABEL_CHOICES = LABEL_VALUES
LABEL_COLUMNS = list(LABEL_TABLE_COLUMNS)
# Number cells as they are: the int ids, and ``factual`` as a boolean cell.
LABEL_VALUE_COLUMNS = frozenset(INT_COLUMNS) | {"factual"}

# Width in characters per Labels column (as OOXML stores it); the wrapped ones get line breaks.
LABEL_WIDTHS = {
    "run": 16, "question_id": 22, "answer_id": 10, "claim_index": 8, "claim": 60, "citations": 12,
    "cited_span": 40, "passage": 60, "label": 15, "justification": 45, "reviewer": 14, "labeled_at": 21,
    "status": 13, "claim_id": 10, "claim_revision": 9, "factual": 8, "judgments": 20, "evidence": 40,
    "adjudicated_by": 14, "adjudicated_at": 21, "adjudication_reason": 45,
}
WRAPPED = frozenset({"claim", "cited_span", "passage", "justification", "judgments", "evidence",
                     "adjudication_reason"})
DEFAULT_WIDTH = 14
# Same palette as static/css/app.css (--supported, --unsupported, --uncited): (ink, background).
LABEL_COLOURS = {
    SUPPORTED: ("1F8A4C", "E3F4EA"),
    UNSUPPORTED: ("B4372F", "FBE7E5"),
    UNCITED: ("6B7280", "EEF0F3"),
}
HEADER_INK, HEADER_FILL = "FFFFFF", "2F5BD3"
FRACTION_FORMAT = "0.00"
LABEL_ERROR_TITLE = "Unknown label"
LABEL_ERROR = "Choose SUPPORTED, UNSUPPORTED or UNCITED (or leave blank)."

ANSWER_COLUMNS = ["question_id", "answer_id", "claims", "cited", "labeled_cited", "supported", "unsupported",
                  "pending", "coverage", "coverage_ratio", "support", "support_ratio", "abstention"]
ANSWER_WIDTHS = {"question_id": 22, "coverage_ratio": 16, "support_ratio": 16, "labeled_cited": 13}
ANSWER_FRACTIONS = frozenset({"coverage", "support"})

SUMMARY_COLUMNS = ["item", "value", "fraction", "note", "ci_low", "ci_high"]
SUMMARY_WIDTHS = {"item": 34, "value": 68, "fraction": 18, "note": 54, "ci_low": 10, "ci_high": 10}

PASSAGE_COLUMNS = ["question_id", "answer_id", "passage_id", "source", "text"]
PASSAGE_WIDTHS = {"question_id": 22, "answer_id": 10, "passage_id": 12, "source": 40, "text": 100}


@dataclass(frozen=True)
class WorkbookInfo:
    """What the Summary sheet says about the table: ``version`` number (None
    for the current table), its ``sha256`` (None for the current table),
    ``reviewer`` (None = agreed labels) and the export time."""

    project: str
    run: str
    version: int | None
    sha256: str | None
    reviewer: str | None
    exported_at: datetime
    note: str = ""


class Fraction(float):
    """A value written with the 0.00 number format (a ratio in [0, 1])."""


def answer_rows(metrics: ClaimMetrics) -> list[list[Any]]:
    """The Answers sheet's rows (``ANSWER_COLUMNS``): counts, then coverage
    and support as :class:`Fraction` (None when undefined or an abstention)
    beside their ratio text ``"3/5 = 0.60"``."""
    per_answer = metrics.per_answer
    data = {column: per_answer[column].tolist() for column in per_answer.columns}
    rows = []
    for i in range(len(per_answer)):
        coverage = Ratio(int(data["cited"][i]), int(data["claims"][i]))
        support = Ratio(int(data["supported"][i]), int(data["labeled_cited"][i]))
        abstention = bool(data["abstention"][i])
        rows.append([
            data["question_id"][i], data["answer_id"][i],
            *(data[c][i] for c in ("claims", "cited", "labeled_cited", "supported", "unsupported", "pending")),
            None if abstention or coverage.value is None else Fraction(coverage.value),
            "" if abstention else str(coverage),
            None if abstention or support.value is None else Fraction(support.value),
            "" if abstention else str(support),
            abstention,
        ])
    return rows


def summary_rows(metrics: ClaimMetrics, info: WorkbookInfo, *, rows: int) -> list[list[Any]]:
    """The Summary sheet's rows (``SUMMARY_COLUMNS``, each as long): the table
    and its version, pooled and per-answer mean metrics with their 95%
    intervals (SPEC §4.5); ratios and bounds as :class:`Fraction`."""
    table = f"version {info.version}" if info.version is not None else "current label table (not a version)"

    def fraction(value: float | None) -> Fraction | None:
        return None if value is None else Fraction(value)

    def mean(value: float | None, skipped: int) -> list[Any]:
        return [fraction(value), format_value(value),
                f"mean of per-answer values; {skipped} answer(s) skipped (undefined)"]

    intervals = run_intervals(run_figures(claims=metrics))

    def bounds(key: str) -> list[Any]:
        interval = intervals[key].interval
        return [fraction(interval.low), fraction(interval.high)] if interval.defined else [None, None]

    lines = [
        ["project", info.project, "", ""],
        ["run", info.run, "", ""],
        ["table", table, "", ""],
        ["version", info.version, "", ""],
        ["sha256", info.sha256 or "—", "", "SHA-256 of the version's canonical JSON Lines file"],
        ["version note", info.note, "", ""],
        ["labels shown", info.reviewer or "agreed labels (the label that counts for scoring)", "", ""],
        ["exported at (UTC)", info.exported_at.strftime("%Y-%m-%d %H:%M:%S"), "", ""],
        ["claims in table", rows, "", "abstentions excluded from the counts below"],
        ["claims (scored)", metrics.claims, "", ""],
        ["cited claims", metrics.cited, "", ""],
        ["labeled cited claims", metrics.labeled_cited, "", ""],
        [SUPPORTED, metrics.supported, "", ""],
        [UNSUPPORTED, metrics.unsupported, "", ""],
        ["pending (cited, no agreed label)", metrics.pending, "", "support is provisional while this is > 0"],
        ["coverage (pooled)", fraction(metrics.coverage.value), str(metrics.coverage), "cited claims / claims",
         *bounds("coverage")],
        ["support (pooled)", fraction(metrics.support.value), str(metrics.support),
         "SUPPORTED / labeled cited claims", *bounds("support")],
        ["gap (pooled)", fraction(metrics.gap), format_value(metrics.gap), "coverage − support", *bounds("gap")],
        ["coverage (per-answer mean)", *mean(metrics.mean_coverage, metrics.coverage_skipped),
         *bounds("mean_coverage")],
        ["support (per-answer mean)", *mean(metrics.mean_support, metrics.support_skipped),
         *bounds("mean_support")],
        ["answers", metrics.answers, "", ""],
        ["abstentions", metrics.abstentions, "", "answers to unanswerable questions citing nothing"],
        ["ci_low, ci_high", "95% interval of the figure, answers as clusters (SPEC §4.5): Wilson at the "
         "effective size for pooled ratios, Student t for per-answer means", "", ""],
    ]
    # Rows without an interval end in empty cells.
    return [line + [None] * (len(SUMMARY_COLUMNS) - len(line)) for line in lines]
