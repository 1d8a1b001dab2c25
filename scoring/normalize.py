"""Text and source normalization shared by every comparison in scoring.

One place decides when two sources or two passages are "the same", so the
doc-id metrics (SPEC §4.2), the source metrics (SPEC §4.3) and the claim
alignment of run comparison (SPEC §5) agree with each other. It also holds
the two marks a text may carry: inline citation markers (SPEC §6), which the
answers importer turns into citations and run comparison strips from claims,
and ellipses, which split a quoted span into parts for the `substring` match
(SPEC §4.3) and for highlighting the span in its passage.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterator

# A bracket group that may be a citation marker: [..] or full-width 【..】, one
# line, at most 40 characters inside. Whether it is one depends on its content.
MARKER_BRACKET = re.compile(r"\[([^\[\]\n]{1,40})\]|【([^【】\n]{1,40})】")
# "Looks like a marker": a digit and only id-like characters ([1], [P1, P3],
# [2-4], [d4]); [sic] or [citation needed] stay text.
MARKER_CONTENT = re.compile(r"^[\w\s,;:#.\-–—]*\d[\w\s,;:#.\-–—]*$")
# An elision in a quoted span: "…", three or more dots, optionally in [ ] or ( ).
ELLIPSIS = re.compile(r"\s*[\[(]?(?:…|\.{3,})[\])]?\s*")

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


@functools.lru_cache(maxsize=8192)
def normalize_source(source: str | None) -> str:
    """Canonical form of a source (document name or URL) for equality tests.

    NFKC, case folding and whitespace collapsing like :func:`normalize_text`;
    for URLs also drops the scheme, a leading ``www.``, a trailing slash and a
    ``#fragment``, so ``https://www.x.org/a/`` and ``http://x.org/a`` are one
    source. ``None`` or blank becomes ``""`` (no source). Memoized: a run cites
    the same sources again and again (an import normalizes each one per
    passage and per citation).
    """
    value = normalize_text(source)
    if not value:
        return ""
    value = re.sub(r"^[a-z][a-z0-9+.-]*://", "", value)
    value = value.removeprefix("www.")
    value = value.split("#", 1)[0]
    return value.rstrip("/")


def marker_brackets(text: str) -> Iterator[tuple[re.Match[str], str]]:
    """The bracket groups of ``text`` that look like citation markers, as
    ``(match, content)`` in text order (content without its brackets)."""
    for match in MARKER_BRACKET.finditer(text):
        content = match.group(1) if match.group(1) is not None else match.group(2)
        if MARKER_CONTENT.match(content):
            yield match, content


def strip_markers(text: str, replacement: str = " ") -> str:
    """``text`` with every bracket that looks like a citation marker replaced."""
    pieces, last = [], 0
    for match, _content in marker_brackets(text):
        pieces += [text[last:match.start()], replacement]
        last = match.end()
    return "".join(pieces) + text[last:] if pieces else text
