"""Metric deltas of a run comparison (SPEC §5): pooled and per-question
coverage, support, gap, citation precision and recall of run A and run B, and
B − A.

Computed from the integer counts as exact fractions (SPEC §4: no epsilons), so
a delta is the float nearest the true difference: 3/4 − 3/5 gives exactly the
float 0.15, not 0.15000000000000002. Any side undefined (zero denominator)
makes the delta ``None``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

from scoring.claims import ClaimMetrics, to_native
from scoring.intervals import PairedDifference, interval_key
from scoring.lazy import pd  # loaded on first use: keeps start-up fast (SPEC §7)
from scoring.ratio import Ratio, exact_gap, format_value


@dataclass(frozen=True)
class MetricDelta:
    """One metric of both runs over the shared questions, and its delta.

    ``a``/``b`` are values in [0, 1] (``gap`` in [−1, 1]) or ``None`` when
    undefined; ``delta`` = b − a or ``None``. ``a_text``/``b_text`` are display
    forms with the fraction where there is one (``"3/5 = 0.60"``, ``"—"``).
    ``difference``: the paired difference with its interval (SPEC §4.5), when
    computed.
    """

    key: str
    label: str
    a: float | None
    b: float | None
    delta: float | None
    a_text: str
    b_text: str
    difference: PairedDifference | None = None

    @property
    def delta_text(self) -> str:
        """``"+0.15"``, ``"−0.20"``, ``"0.00"`` or ``"—"``."""
        return format_delta(self.delta)

    def to_dict(self, *, interval: bool = False) -> dict[str, Any]:
        """``{"a", "b", "delta", "a_text", "b_text"}``; with ``interval`` and a
        ``difference``, also its interval (``ci95``, or ``ci`` with ``level``),
        ``n_questions`` and ``method`` (SPEC §4.5)."""
        out = {"a": self.a, "b": self.b, "delta": self.delta, "a_text": self.a_text, "b_text": self.b_text}
        if interval and self.difference is not None:
            shown = self.difference.as_dict()
            key = interval_key(self.difference.level)
            out |= {key: shown[key], "n_questions": shown["n_questions"], "method": shown["method"]}
            if "level" in shown:
                out["level"] = shown["level"]
        return out


def format_delta(delta: float | None, digits: int = 2) -> str:
    """Display form of a delta, sign always shown: ``"+0.15"``, ``"−0.20"``,
    ``"0.00"`` only for no change at all, ``"—"`` when undefined. A change too
    small for ``digits`` gets up to 4 digits (``"−0.004"``), so a real change
    never reads as none. Rounds as :func:`scoring.ratio.format_value` (half away
    from zero): ``+0.125`` is ``"+0.13"``."""
    if delta is None or (isinstance(delta, float) and math.isnan(delta)):
        return "—"
    if delta == 0:
        return format_value(0.0, digits)
    shown = digits
    while shown < 4 and float(format_value(abs(delta), shown)) == 0:
        shown += 1
    text = format_value(abs(delta), shown)
    if float(text) == 0:
        text = "<" + format_value(10 ** -shown, shown)
    return ("+" if delta > 0 else "−") + text


def _float(value: Fraction | None) -> float | None:
    return None if value is None else float(value)


def _minus(b: Fraction | None, a: Fraction | None) -> Fraction | None:
    return None if a is None or b is None else b - a


def _ratio_delta(key: str, label: str, a: Ratio, b: Ratio) -> MetricDelta:
    return MetricDelta(key, label, a.value, b.value, _float(_minus(b.fraction, a.fraction)), str(a), str(b))


def summary_deltas(
    claims_a: ClaimMetrics, claims_b: ClaimMetrics, ids_a, ids_b, fractions: dict[str, list[Fraction | None]],
    judged: tuple[Ratio, Ratio, str] | None = None,
) -> list[MetricDelta]:
    """The comparison's summary rows: coverage, support, gap, the supported rate (SPEC §4.3b),
    with ``judged`` (A's and B's judged citation precision and the rule) that precision,
    with gold ids citation precision and recall, then the per-answer means."""
    gap_a = exact_gap(claims_a.coverage, claims_a.support)
    gap_b = exact_gap(claims_b.coverage, claims_b.support)
    rows = [
        _ratio_delta("coverage", "Coverage", claims_a.coverage, claims_b.coverage),
        _with_pending(_ratio_delta("support", "Support", claims_a.support, claims_b.support), claims_a, claims_b),
        MetricDelta("gap", "Gap (coverage − support)", _float(gap_a), _float(gap_b), _float(_minus(gap_b, gap_a)),
                    format_value(_float(gap_a)), format_value(_float(gap_b))),
        _ratio_delta("supported_rate", "Claims supported by their citations", claims_a.supported_rate,
                     claims_b.supported_rate),
    ]
    if judged is not None:
        judged_a, judged_b, rule = judged
        rows.append(_ratio_delta("judged_precision", f"Citation precision, judged ({rule})", judged_a, judged_b))
    if ids_a is not None and ids_b is not None:
        rows.append(_ratio_delta("precision", "Citation precision", ids_a.precision, ids_b.precision))
        rows.append(_ratio_delta("recall", "Citation recall", ids_a.recall, ids_b.recall))
    # Per-answer means (SPEC §4), as exact fractions so the delta is exact too.
    for metric, label in (("coverage", "Coverage (per-answer mean)"), ("support", "Support (per-answer mean)")):
        mean_a, skipped_a = _exact_mean(fractions[f"{metric}_a"])
        mean_b, skipped_b = _exact_mean(fractions[f"{metric}_b"])
        rows.append(MetricDelta(
            f"mean_{metric}", label, _float(mean_a), _float(mean_b), _float(_minus(mean_b, mean_a)),
            f"{format_value(_float(mean_a))} ({skipped_a} skipped)",
            f"{format_value(_float(mean_b))} ({skipped_b} skipped)",
        ))
    return rows


def _with_pending(row: MetricDelta, claims_a: ClaimMetrics, claims_b: ClaimMetrics) -> MetricDelta:
    """Support with its pending count beside it: provisional while claims wait (SPEC §4.1)."""
    def text(base: str, pending: int) -> str:
        return f"{base} ({pending} pending)" if pending else base

    return replace(row, a_text=text(row.a_text, claims_a.pending), b_text=text(row.b_text, claims_b.pending))


def _exact_mean(values: list[Fraction | None]) -> tuple[Fraction | None, int]:
    defined = [value for value in values if value is not None]
    skipped = len(values) - len(defined)
    return (sum(defined, Fraction(0)) / len(defined) if defined else None), skipped


_COUNT_COLUMNS = ("claims", "cited", "labeled_cited", "supported", "pending")
_ID_COUNT_COLUMNS = ("tp", "fp", "fn")


def per_question_deltas(
    shared: list[str], claims_a: ClaimMetrics, claims_b: ClaimMetrics, ids_a, ids_b, *,
    diff_counts: dict[str, pd.DataFrame], alignment: pd.DataFrame,
) -> tuple[pd.DataFrame, dict[str, list[Fraction | None]]]:
    table = pd.DataFrame({"question_id": pd.Series(shared, dtype=object)})
    fractions: dict[str, list[Fraction | None]] = {}
    for suffix, metrics, ids in (("a", claims_a, ids_a), ("b", claims_b, ids_b)):
        per = metrics.per_answer.assign(question_id=metrics.per_answer["question_id"].astype(str))
        per = per.set_index("question_id").reindex(shared)
        table[f"answer_id_{suffix}"] = per["answer_id"].to_numpy(dtype=object)
        for column in _COUNT_COLUMNS:
            table[f"{column}_{suffix}"] = per[column].fillna(0).to_numpy(dtype="int64")
        coverage = [_count_fraction(c, n) for c, n in zip(per["cited"], per["claims"], strict=True)]
        # claim_metrics counts factual claims only: an abstention has 0 claims, so both stay None.
        support = [_count_fraction(s, n) for s, n in zip(per["supported"], per["labeled_cited"], strict=True)]
        gap = [exact_gap(Ratio(int(c), int(n)), Ratio(int(s), int(k))) for c, n, s, k in zip(
            *(per[column].fillna(0) for column in ("cited", "claims", "supported", "labeled_cited")), strict=True)]
        fractions |= {f"coverage_{suffix}": coverage, f"support_{suffix}": support, f"gap_{suffix}": gap}
        if ids is not None:
            per_ids = ids.per_answer.assign(question_id=ids.per_answer["question_id"].astype(str))
            per_ids = per_ids.set_index("question_id").reindex(shared)
            for column in _ID_COUNT_COLUMNS:
                table[f"{column}_{suffix}"] = [to_native(v) for v in per_ids[column].astype(object).tolist()]
            tp, fp, fn = (table[f"{c}_{suffix}"].tolist() for c in _ID_COUNT_COLUMNS)
            fractions[f"precision_{suffix}"] = [
                None if t is None else _count_fraction(t, t + f) for t, f in zip(tp, fp, strict=True)
            ]
            fractions[f"recall_{suffix}"] = [
                None if t is None else _count_fraction(t, t + n) for t, n in zip(tp, fn, strict=True)
            ]
    metrics = ["coverage", "support", "gap"] + (["precision", "recall"] if ids_a is not None else [])
    for metric in metrics:
        a, b = fractions[f"{metric}_a"], fractions[f"{metric}_b"]
        table[f"{metric}_a"] = pd.Series([_float(v) for v in a], dtype=object)
        table[f"{metric}_b"] = pd.Series([_float(v) for v in b], dtype=object)
        table[f"{metric}_delta"] = pd.Series([_float(_minus(y, x)) for x, y in zip(a, b, strict=True)], dtype=object)
    aligned = alignment.loc[alignment["status"] == "aligned", "question_id"]
    table["aligned"] = aligned.value_counts().reindex(shared, fill_value=0).to_numpy(dtype="int64")
    for name, frame in diff_counts.items():
        counts = frame["question_id"].value_counts() if len(frame) else pd.Series(dtype="int64")
        table[name] = counts.reindex(shared, fill_value=0).to_numpy(dtype="int64")
    return table, fractions


def _count_fraction(numerator: Any, denominator: Any) -> Fraction | None:
    if denominator is None or pd.isna(denominator) or int(denominator) == 0:
        return None
    return Fraction(int(numerator), int(denominator))
