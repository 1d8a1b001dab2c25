"""Label budgets and the non-inferiority gate (SPEC §4.5 "Label budget").

Built on the intervals of :mod:`scoring.intervals`:

- :func:`answers_needed`: the answers to label, at the current variance, for an
  interval to reach a target half-width (``⌈n·(w/h)²⌉``).
- :func:`non_inferior`: the CI gate ``score --baseline``: is run B no more than
  ``max_drop`` below run A (the paired difference's lower bound)?
- :func:`settle_budget`: the questions the gate needs to decide either way.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from scoring.intervals import Interval, PairedDifference

# Half-widths the label budget is quoted for (SPEC §4.5 "Label budget").
BUDGET_HALF_WIDTHS = (0.05, 0.03, 0.02)


def non_inferior(difference: PairedDifference, max_drop: float) -> bool | None:
    """Non-inferiority gate (SPEC §4.5): ``True`` iff the interval's lower bound
    of ``B − A`` is ≥ ``−max_drop``; ``None`` when there is no interval."""
    if not difference.defined:
        return None
    return difference.low >= -max_drop


@dataclass(frozen=True, slots=True)
class Budget:
    """Answers to label for a target half-width (SPEC §4.5 "Label budget").

    ``needed`` = ``⌈n·(w/h)²⌉`` answers in all, ``more`` = ``needed − n`` (≥ 0);
    ``reachable`` is ``False`` when ``needed`` exceeds the answers the run holds
    (``more`` is then the count still labelable, and the figure can't be reached).
    """

    half_width: float
    needed: int
    more: int
    reachable: bool

    def as_dict(self) -> dict:
        return {"half_width": self.half_width, "needed": self.needed, "more": self.more, "reachable": self.reachable}


def answers_needed(
    interval: Interval | PairedDifference,
    *,
    available: int | None = None,
    half_widths: Sequence[float] = BUDGET_HALF_WIDTHS,
) -> list[Budget] | None:
    """Label budget per target half-width at the current variance (SPEC §4.5).

    ``n`` is the interval's answers (questions for a paired difference), ``w``
    its current half-width; ``available`` the answers the run holds in all
    (``None``: no cap). ``None`` when there is no interval to scale.
    """
    n = interval.n_questions if isinstance(interval, PairedDifference) else interval.n_answers
    w = interval.half_width
    if w is None or n == 0:
        return None
    budgets = []
    for h in half_widths:
        needed = math.ceil(n * (w / h) ** 2)
        reachable = available is None or needed <= available
        more = max(0, needed - n) if reachable else max(0, available - n)
        budgets.append(Budget(h, needed, more, reachable))
    return budgets


def settle_budget(difference: PairedDifference, max_drop: float, *, available: int | None = None) -> Budget | None:
    """Questions to label, at the current variance, for the gate's interval to leave
    the bound ``−max_drop`` on one side (SPEC §4.5 "Label budget" with ``h`` the
    distance from ``delta`` to the bound and ``w`` the interval's reach from
    ``delta`` before clipping to [−1, 1]: the larger of its two sides).
    ``None`` without an interval, or when ``delta`` sits exactly on the bound (no
    number of answers settles it).
    """
    if not difference.defined or difference.delta is None:
        return None
    distance = abs(difference.delta + max_drop)
    n = difference.n_questions
    if distance == 0 or n == 0:
        return None
    reach = max(difference.high - difference.delta, difference.delta - difference.low)
    needed = math.ceil(n * (reach / distance) ** 2)
    reachable = available is None or needed <= available
    more = max(0, needed - n) if reachable else max(0, available - n)
    return Budget(distance, needed, more, reachable)
