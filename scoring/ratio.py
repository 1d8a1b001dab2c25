"""Ratios that stay exact and say when they are undefined (SPEC §4).

Every metric is computed from integer counts; a ratio with a zero denominator
is ``None`` (shown as "—"), never 0 and never NaN.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
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

    @property
    def fraction(self) -> Fraction | None:
        """The exact value, or ``None`` when ``denominator`` is 0."""
        return None if self.denominator == 0 else Fraction(self.numerator, self.denominator)

    def __str__(self) -> str:
        return f"{self.numerator}/{self.denominator} = {format_value(self.value)}"


def format_value(value: float | None, digits: int = 2) -> str:
    """Display form of a metric value: ``"0.60"``, or ``"—"`` for ``None``.

    Rounds the shortest decimal form of the float half away from zero (as
    Django's ``floatformat``), and is the one rounding of every figure shown:
    the pages' ``|figure`` and ``|ci`` filters, the CLI's texts, the exports
    and the API's texts call it, so 1/8 is ``"0.13"`` everywhere (a float
    format would give ``"0.12"``, the tie 0.125 rounded to even).
    """
    if value is None:
        return "—"
    rounded = Decimal(repr(float(value))).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP)
    return str(abs(rounded) if rounded == 0 else rounded)  # no "-0.00", as floatformat


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


def exact_gap(coverage: Ratio, support: Ratio) -> Fraction | None:
    """``coverage − support`` as an exact fraction of the integer counts, or
    ``None`` when either is undefined (SPEC §4.1 gap). Run comparison takes
    deltas of gaps from it, so they are exact too."""
    exact_coverage, exact_support = coverage.fraction, support.fraction
    return None if exact_coverage is None or exact_support is None else exact_coverage - exact_support


def gap(coverage: Ratio, support: Ratio) -> float | None:
    """``coverage − support`` (SPEC §4.1): the float nearest the exact
    difference, or ``None`` when either is undefined.

    The one computation of the gap for pages, CLI, exports and comparisons.
    Subtracting the two floats instead rounds twice: 3/5 − 3/8 would give
    0.22499999999999998 and show as 0.22 where the gap is 0.225 (0.23).
    """
    exact = exact_gap(coverage, support)
    return None if exact is None else float(exact)
