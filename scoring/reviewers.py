"""Reviewer quality figures (SPEC §4.4): gold accuracy with its Wilson interval, the
qualification rule, seconds per claim, agreement with the label that counts, and
the "fast and nearly always SUPPORTED" flag. Framework-free: plain numbers in.

- Gold accuracy = correct / gold claims labeled, with the Wilson score interval
  (SPEC §4.5's formula at m = the gold claims: each gold claim is one check, its
  own cluster), ``None`` when no gold claim was labeled. 3/5 → 0.60 (0.231–0.882).
- Qualification rule "lower bound ≥ L after ≥ N gold claims": qualified when the
  reviewer labeled at least N gold claims and the interval's lower bound is at
  least L; below it otherwise (too few gold claims yet, or a low bound).
- Seconds per claim: the gaps between a reviewer's consecutive label saves in a
  run, a gap over ``SITTING_GAP_SECONDS`` (10 minutes) dropped as a break between
  sittings; the median of the rest (``None`` with no gap left).
- Agreement with the counted label: Cohen's kappa of the reviewer's labels
  against the label that counts for each claim without theirs (the lead's
  adjudication, else the label the claim's other human reviewers agree on), from
  the 2 × 2 confusion matrix, with its 95 % interval (Fleiss, Cohen & Everitt's
  large-sample SE, as ``scoring.judge_grading.kappa_interval``).
- Flag: median ≤ ``FAST_SECONDS`` and UNSUPPORTED share ≤ ``NEARLY_ALWAYS_SUPPORTED``'s
  complement, on at least ``FLAG_MIN_LABELS`` labels.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from scoring.intervals import DEFAULT_CONFIDENCE, wilson

# A break between sittings (SPEC §4.4).
SITTING_GAP_SECONDS = 600
# Reading a claim and its cited passage takes longer than this; a reviewer whose median
# save is this fast and who nearly never says UNSUPPORTED is likely clicking through.
FAST_SECONDS = 10.0
NEARLY_ALWAYS_SUPPORTED = 0.95
FLAG_MIN_LABELS = 20


def accuracy_interval(correct: int, total: int, *,
                      confidence: float = DEFAULT_CONFIDENCE) -> tuple[float, float] | None:
    """The Wilson score interval of ``correct / total`` gold claims (bounds in [0, 1]),
    ``None`` when ``total`` is 0. Raises ``ValueError`` when ``correct`` is outside
    [0, total]."""
    if not 0 <= correct <= total:
        raise ValueError(f"correct gold labels must be between 0 and {total}, not {correct}")
    if total == 0:
        return None
    return wilson(correct / total, total, confidence=confidence)


def qualified(correct: int, total: int, *, min_lower: float | None, min_gold: int | None) -> bool | None:
    """Whether a reviewer meets the rule "Wilson lower bound ≥ ``min_lower`` after ≥
    ``min_gold`` gold claims" (module docstring); ``None`` when there is no rule
    (either part ``None``)."""
    if min_lower is None or min_gold is None:
        return None
    interval = accuracy_interval(correct, total)
    return total >= min_gold and interval is not None and interval[0] >= min_lower


def median_gap_seconds(times: Sequence[float], *, max_gap: float = SITTING_GAP_SECONDS) -> float | None:
    """Median of the gaps between consecutive save ``times`` (seconds, any order),
    gaps over ``max_gap`` dropped; ``None`` when no gap is left. Saves at 0, 12,
    20, 900, 905 s → gaps 12, 8, 880 (dropped), 5 → median 8.0."""
    ordered = sorted(times)
    gaps = [b - a for a, b in zip(ordered, ordered[1:], strict=False) if b - a <= max_gap]
    return float(statistics.median(gaps)) if gaps else None


def fast_and_supported(*, median_seconds: float | None, unsupported: int, labels: int) -> bool:
    """The flag of the module docstring: fast (median ≤ ``FAST_SECONDS``) and nearly
    always SUPPORTED (UNSUPPORTED ≤ 5 % of the labels), on ``FLAG_MIN_LABELS`` labels
    at least."""
    return (labels >= FLAG_MIN_LABELS and median_seconds is not None and median_seconds <= FAST_SECONDS
            and unsupported <= (1 - NEARLY_ALWAYS_SUPPORTED) * labels)
