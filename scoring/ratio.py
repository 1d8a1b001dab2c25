"""Ratios that stay exact and say when they are undefined (SPEC §4).

Every metric is computed from integer counts; a ratio with a zero denominator
is ``None`` (shown as "—"), never 0 and never NaN.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction


@dataclass(frozen=True, slots=True)
class Ratio:
    """``numerator / denominator`` from integer counts.

    ``value`` is a float in [0, 1] (or any non-negative float for counts that
    are not proportions), or ``None`` when ``denominator`` is 0. A perfect
    score is exactly ``1.0``. ``str()`` gives the display form ``"3/5 = 0.60"``
    or ``"0/0 = —"``.
    """

    numerator: int
    denominator: int

    @property
    def value(self) -> float | None:
        if self.denominator == 0:
            return None
        return self.numerator / self.denominator

    def __str__(self) -> str:
        return f"{self.numerator}/{self.denominator} = {format_value(self.value)}"


def format_value(value: float | None, digits: int = 2) -> str:
    """Display form of a metric value: ``"0.60"``, or ``"—"`` for ``None``."""
    return "—" if value is None else f"{value:.{digits}f}"


def f1(precision: float | None, recall: float | None) -> float | None:
    """Harmonic mean of precision and recall (SPEC §4.3).

    ``None`` when either side is ``None``; ``0.0`` when both are 0. Computed
    through :class:`fractions.Fraction` so ``f1(1.0, 1.0) == 1.0`` exactly.
    """
    if precision is None or recall is None:
        return None
    if precision == 0 and recall == 0:
        return 0.0
    p, r = Fraction(precision), Fraction(recall)
    return float(2 * p * r / (p + r))


def difference(a: float | None, b: float | None) -> float | None:
    """``a - b``, or ``None`` when either is undefined (SPEC §4.1 gap, §5 deltas)."""
    if a is None or b is None:
        return None
    return a - b


def ratio_difference(a: Ratio, b: Ratio) -> float | None:
    """``a − b`` computed on the exact fractions (``5/5 − 3/5`` is exactly 0.4,
    not 0.40000000000000002), or ``None`` when either is undefined (SPEC §4.1 gap)."""
    if a.denominator == 0 or b.denominator == 0:
        return None
    return float(Fraction(a.numerator, a.denominator) - Fraction(b.numerator, b.denominator))
