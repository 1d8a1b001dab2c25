"""One strict reading of the integers that URLs and forms carry (ids, revisions,
version numbers).

Python's ``int()`` and ``str.isdigit()`` accept far more than a URL should
carry: ``"²".isdigit()`` is True but ``int("²")`` raises (a 500), ``int("٣")``
is 3 (Arabic-Indic digits silently name claim 3), and ``int(" 7")`` or
``int("+7")`` pass too. Every view reads such values through this module:

- ``int_param(value)`` for query strings and POST fields;
- ``IdField`` for Django forms;
- ``IdConverter`` (registered as ``<id:...>`` in ``labeling/urls.py``) for paths.

A value is accepted when it is 1 to 10 ASCII digits naming a number from 1
to ``MAX_PARAM``; anything else reads as "no value" (``None``), never as an
exception, so a typo'd or hostile URL gets the page's own answer for a missing
value (a default, a form error or a 404).
"""

from __future__ import annotations

import re

from django import forms

# The largest value of the narrowest integer column an id is compared with
# (PositiveIntegerField is a 32-bit ``integer`` on PostgreSQL): any accepted
# value fits every id, revision and version-number column, so no query can
# overflow. Larger ids would need more than two billion rows of one table.
MAX_PARAM = 2**31 - 1

_DIGITS = re.compile(r"[0-9]{1,10}")


def int_param(value: object) -> int | None:
    """``value`` (a str from ``request.GET``/``POST``, or ``None``) as an int
    from 1 to ``MAX_PARAM``, or ``None`` when it is anything else: empty,
    signed, padded with whitespace, non-ASCII digits (``"²"``, ``"٣"``), zero,
    or too large."""
    if not isinstance(value, str) or not _DIGITS.fullmatch(value):
        return None
    number = int(value)
    return number if 1 <= number <= MAX_PARAM else None


class IdField(forms.IntegerField):
    """A form field read by ``int_param``: an id (or revision, or version
    number) from 1 to ``MAX_PARAM`` in ASCII digits, else "Enter a whole
    number" (or "required" when blank and required)."""

    def to_python(self, value: object) -> int | None:
        if value in self.empty_values:
            return None
        number = int_param(value)
        if number is None:
            raise forms.ValidationError(self.error_messages["invalid"], code="invalid")
        return number


class IdConverter:
    """Path converter ``<id:name>``: like ``<int:name>`` but bounded by
    ``MAX_PARAM`` and never 0, so ``/answers/99999999999999999999/`` is a
    404 of the URL resolver, not a query on an out-of-range value."""

    regex = "[0-9]{1,10}"

    def to_python(self, value: str) -> int:
        number = int_param(value)
        if number is None:
            # Django's resolver reads ValueError as "this pattern does not match": a 404.
            raise ValueError(f"{value!r} is not an id")
        return number

    def to_url(self, value: int) -> str:
        return str(value)
