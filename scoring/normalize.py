"""Text and source normalization shared by every comparison in scoring.

One place decides when two sources or two passages are "the same", so the
doc-id metrics (SPEC §4.2), the source metrics (SPEC §4.3) and the claim
alignment of run comparison (SPEC §5) agree with each other.
"""

from __future__ import annotations

import re
import unicodedata

# Typographic folding (SPEC §4.3 `substring`): curly quotes -> straight,
# en/em dashes and the minus sign -> '-', no-break spaces -> space.
_TYPOGRAPHIC = str.maketrans(
    {
        "\u2018": "'",
        "\u2019": "'",
        "\u201a": "'",
        "\u201b": "'",
        "\u2032": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u201e": '"',
        "\u201f": '"',
        "\u2033": '"',
        "\u00ab": '"',
        "\u00bb": '"',
        "\u2010": "-",
        "\u2011": "-",
        "\u2012": "-",
        "\u2013": "-",
        "\u2014": "-",
        "\u2015": "-",
        "\u2212": "-",
        "\u00a0": " ",
        "\u202f": " ",
        "\u2007": " ",
    }
)


def normalize_text(text: str | None) -> str:
    """Fold ``text`` for comparison: NFKC, typographic folding, case folding,
    whitespace collapsed to single spaces and stripped (SPEC §4.3).

    ``None`` becomes ``""``. The result is only for comparing, never for display.
    """
    if not text:
        return ""
    folded = unicodedata.normalize("NFKC", text).translate(_TYPOGRAPHIC).casefold()
    # str.split() splits on the same Unicode whitespace as \s+, about 4x faster.
    return " ".join(folded.split())


def normalize_source(source: str | None) -> str:
    """Canonical form of a source (document name or URL) for equality tests.

    NFKC, case folding and whitespace collapsing like :func:`normalize_text`;
    for URLs also drops the scheme, a leading ``www.``, a trailing slash and a
    ``#fragment``, so ``https://www.x.org/a/`` and ``http://x.org/a`` are one
    source. ``None`` or blank becomes ``""`` (no source).
    """
    value = normalize_text(source)
    if not value:
        return ""
    value = re.sub(r"^[a-z][a-z0-9+.-]*://", "", value)
    value = value.removeprefix("www.")
    value = value.split("#", 1)[0]
    return value.rstrip("/")
