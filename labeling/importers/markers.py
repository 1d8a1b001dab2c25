"""Inline citation markers and sentence claims for answers given without
``claims`` (SPEC §6).

Markers such as ``[P1]``, ``[1]``, ``[d4]``, ``[1, 3]``, ``[2-4]``, ``[1][2]``
and full-width ``【4】`` become citations. A bracket that looks like a marker
but cannot be parsed is reported, never silently dropped. Sentence boundaries
come from ``sentencex`` (a maintained rule-based segmenter).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass

from scoring.normalize import marker_brackets

_ID = re.compile(r"^([A-Za-z]{0,12})\s?#?(\d+)([a-z]?)$")
_RANGE = re.compile(r"^([A-Za-z]{0,12})\s?(\d+)\s*[-–—]\s*([A-Za-z]{0,12})\s?(\d+)$")
_MAX_RANGE = 100


class MarkerError(ValueError):
    """A bracket that looks like a citation marker but cannot be parsed."""


@dataclass(frozen=True, slots=True)
class Marker:
    """A marker found in text: ``ids`` cited, at ``start:end`` of the text."""

    ids: tuple[str, ...]
    start: int
    end: int


@functools.lru_cache(maxsize=4096)
def parse_marker_content(content: str) -> tuple[str, ...]:
    """Ids cited by one marker's content, e.g. ``"1, 3"`` → ``("1", "3")``,
    ``"2-4"`` → ``("2", "3", "4")``, ``"P1"`` → ``("P1",)``.

    Raises MarkerError naming the reason for empty items, reversed or huge
    ranges, ranges across prefixes, and items that are not ids. Memoized (a
    tuple, never changed): answers repeat the same few markers.
    """
    ids: list[str] = []
    for raw in re.split(r"[,;]", content):
        item = raw.strip()
        if not item:
            raise MarkerError(f"empty item in [{content}]")
        if match := _ID.match(item):
            prefix, number, suffix = match.groups()
            ids.append(f"{prefix}{_ascii_digits(number)}{suffix}")
            continue
        if match := _RANGE.match(item):
            prefix_a, first, prefix_b, last = match.groups()
            if prefix_b and prefix_b != prefix_a:
                raise MarkerError(f"range {item!r} mixes prefixes {prefix_a!r} and {prefix_b!r}")
            low, high = int(first), int(last)
            if low > high:
                raise MarkerError(f"range {item!r} runs backwards")
            if high - low > _MAX_RANGE:
                raise MarkerError(f"range {item!r} spans more than {_MAX_RANGE} ids")
            ids.extend(f"{prefix_a}{n}" for n in range(low, high + 1))
            continue
        raise MarkerError(f"{item!r} is not a passage id")
    return tuple(ids)


def _ascii_digits(number: str) -> str:
    """``"١٢"`` → ``"12"``: \\d also matches other scripts' digits, and passage ids are ASCII."""
    if number.isascii():
        return number
    return "".join(str(unicodedata.digit(ch)) for ch in number)


def find_markers(text: str) -> tuple[list[Marker], list[str]]:
    """All citation markers in ``text`` and the problems found.

    Returns ``(markers, problems)``; each problem is a message naming the
    bracket that looks like a marker (has a digit, only id-like characters)
    but cannot be parsed (:func:`marker_problems`). Brackets that do not look
    like markers (``[sic]``) are plain text.
    """
    markers: list[Marker] = []
    problems: list[str] = []
    for match, content in marker_brackets(text):
        try:
            ids = parse_marker_content(content)
        except MarkerError as exc:
            problems.append(_unparseable(match, exc))
            continue
        markers.append(Marker(ids=ids, start=match.start(), end=match.end()))
    return markers, problems


def marker_problems(text: str) -> list[str]:
    """The problems of :func:`find_markers` alone, without building its markers:
    what an answer given with its claims is checked for (a warning per
    unparseable marker)."""
    problems: list[str] = []
    for match, content in marker_brackets(text):
        try:
            parse_marker_content(content)
        except MarkerError as exc:
            problems.append(_unparseable(match, exc))
    return problems


def _unparseable(match: re.Match[str], error: MarkerError) -> str:
    return f"unparseable citation marker {match.group(0)!r} at character {match.start()}: {error}"


@dataclass(frozen=True, slots=True)
class SentenceClaim:
    """A sentence of an answer with the ids its markers cite (order kept, no repeats)."""

    text: str
    start: int
    end: int
    cited_ids: tuple[str, ...]


def split_claims(answer: str, *, language: str = "en") -> tuple[list[SentenceClaim], list[str]]:
    """Split ``answer`` into sentence claims with their cited ids (SPEC §6).

    Sentences are located by offsets in ``answer`` (whitespace trimmed);
    markers that open a sentence (``"… backoff. [2] Next"``) belong to the
    sentence before. Returns ``(claims, problems)`` where ``problems`` are the
    unparseable markers of :func:`find_markers`.
    """
    # sentencex loads its language rules on import: only files without claims need it
    from sentencex import get_sentence_boundaries

    markers, problems = find_markers(answer)
    spans: list[list[int]] = []
    for boundary in get_sentence_boundaries(language, answer):
        start, end = boundary["start_index"], boundary["end_index"]
        while start < end and answer[start].isspace():
            start += 1
        while end > start and answer[end - 1].isspace():
            end -= 1
        if start == end:
            continue
        # Leading markers attach to the previous sentence.
        for marker in markers:
            if spans and marker.start == start:
                spans[-1][1] = marker.end
                start = marker.end
                while start < end and answer[start].isspace():
                    start += 1
        if start < end:
            spans.append([start, end])
        elif spans:
            spans[-1][1] = max(spans[-1][1], end)
    claims = []
    for start, end in spans:
        cited: list[str] = []
        for marker in markers:
            if start <= marker.start and marker.end <= end:
                cited.extend(i for i in marker.ids if i not in cited)
        claims.append(SentenceClaim(text=answer[start:end], start=start, end=end, cited_ids=tuple(cited)))
    return claims, problems
