"""The one reader of whole numbers in imported files (claim indexes, ids, 0/1 verdicts).

File cells come as text (CSV), numbers (XLSX, JSON) or both. Python's ``int()``
and ``str.isdigit()`` accept more than a file should carry: ``"²".isdigit()`` is
True but ``int("²")`` raises, ``int("٣")`` is 3 and ``float("٣")`` is 3.0, so a
non-ASCII digit would silently name another claim. The rule is that of
``labeling.views.params``: ASCII digits only, no sign, no padding inside the
cell (surrounding whitespace is trimmed, as every importer trims cells).
"""

from __future__ import annotations

import re
from typing import Any

# The database's BIGINT; larger values overflow SQLite and PostgreSQL.
MAX_WHOLE_NUMBER = 2**63 - 1
# Claim indexes and other PositiveIntegerField columns (32-bit on PostgreSQL).
MAX_SMALL_NUMBER = 2**31 - 1
_ASCII_DIGITS = re.compile(r"[0-9]+")
_SHOWN = 40


class CellError(ValueError):
    """A cell that is not a whole number in range; ``str()`` is the reason for the reader."""


def whole_number(value: Any, *, minimum: int = 0, maximum: int = MAX_WHOLE_NUMBER) -> int:
    """``value`` (str, int or integral float from a CSV/XLSX/JSON cell) as an int in
    ``[minimum, maximum]``.

    Raises :class:`CellError` with a reason naming the value ("expected a whole
    number, got '²'") for booleans, fractions, signs, non-ASCII digits, text,
    and values out of range. Blank cells are the caller's business.
    """
    if isinstance(value, bool):
        raise CellError(f"expected a whole number, got {value!r}")
    if isinstance(value, int):
        number = value
    elif isinstance(value, float) and value.is_integer():
        number = int(value)
    elif isinstance(value, str) and _ASCII_DIGITS.fullmatch(value.strip()):
        digits = value.strip().lstrip("0") or "0"
        if len(digits) > 40:  # int() refuses thousands of digits; nothing valid is that long
            raise CellError(f"expected a whole number from {minimum} to {maximum}, got {digits[:20]}… "
                            f"({len(digits)} digits)")
        number = int(digits)
    else:
        shown = value if not isinstance(value, str) or len(value) <= _SHOWN else value[:_SHOWN] + "…"
        raise CellError(f"expected a whole number, got {shown!r}")
    if number < minimum:
        raise CellError(f"expected a whole number ≥ {minimum}, got {number}")
    if number > maximum:
        shown = str(number) if number < 10**40 else f"{str(number)[:20]}… ({len(str(number))} digits)"
        raise CellError(f"expected a whole number from {minimum} to {maximum}, got {shown}")
    return number
