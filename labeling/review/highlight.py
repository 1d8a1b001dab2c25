"""Split untrusted text into segments the template escapes one by one (STYLE §5).

Nothing here builds HTML: every function returns plain ``Segment`` tuples
``(text, kind)`` and the template wraps each part in ``<mark>`` or not, with
autoescape on. ``kind`` is ``""`` (plain), ``"span"`` (the quoted span a
citation points at, SPEC §2) or ``"word"`` (a word the passage shares with the
claim, shown when the citation has no span so the reviewer finds the
evidence fast).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from typing import NamedTuple

from scoring.normalize import ELLIPSIS

# Small English stopword list: words that say nothing about whether a passage
# backs a claim (highlighting them would mark half of every passage).
STOPWORDS = frozenset("""
a about above after again against all also am an and any are as at be because been before being
below between both but by can could did do does doing down during each few for from further had
has have having he her here hers herself him himself his how i if in into is it its itself just
me more most my myself no nor not now of off on once only or other our ours ourselves out over
own same she should so some such than that the their theirs them themselves then there these
they this those through to too under until up very was we were what when where which while who
whom why will with would you your yours yourself yourselves may might must shall one two many
much however thus therefore e.g i.e etc via per within without upon among across
""".split())

_WORD = re.compile(r"\w+(?:['’]\w+)*", re.UNICODE)


class Segment(NamedTuple):
    text: str
    kind: str  # "" plain, "span" quoted span, "word" word shared with the claim


def _fold(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


def _stem(word: str) -> str:
    # Plural/possessive folding only: "passages" and "passage" mark each other.
    word = word.replace("’", "'")
    if word.endswith("'s"):
        word = word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    return word


def content_words(text: str) -> set[str]:
    """The casefolded, stemmed words of ``text`` minus stopwords and 1-letter words."""
    words = set()
    for match in _WORD.finditer(_fold(text)):
        word = match.group()
        if len(word) > 1 and word not in STOPWORDS:
            words.add(_stem(word))
    return words


def _merge(segments: Iterable[Segment]) -> list[Segment]:
    out: list[Segment] = []
    for segment in segments:
        if not segment.text:
            continue
        if out and out[-1].kind == segment.kind:
            out[-1] = Segment(out[-1].text + segment.text, segment.kind)
        else:
            out.append(segment)
    return out


def span_ranges(passage: str, span: str) -> list[tuple[int, int]] | None:
    """Character ranges of ``span`` inside ``passage``, or ``None`` when it is not there.

    The span may quote several parts joined by an ellipsis (``…``, ``...``,
    ``[...]``: ``scoring.normalize.ELLIPSIS``, as the `substring` match splits it);
    each part is looked up in order after the previous one. Matching is exact
    first, then case-insensitive with whitespace runs collapsed (offsets always
    refer to the original ``passage``).
    """
    parts = [part for part in ELLIPSIS.split(span.strip()) if part.strip()]
    if not parts:
        return None
    ranges: list[tuple[int, int]] = []
    cursor = 0
    for part in parts:
        found = _find_loose(passage, part.strip(), cursor)
        if found is None:
            return None
        ranges.append(found)
        cursor = found[1]
    return ranges


def _find_loose(text: str, needle: str, start: int) -> tuple[int, int] | None:
    index = text.find(needle, start)
    if index >= 0:
        return index, index + len(needle)
    # Case-insensitive, any whitespace run matches any whitespace run.
    pattern = r"\s+".join(re.escape(piece) for piece in needle.split())
    match = re.compile(pattern, re.IGNORECASE).search(text, start)
    if match:
        return match.start(), match.end()
    return None


def highlight_span(passage: str, span: str) -> tuple[list[Segment], bool]:
    """Passage as segments with the quoted ``span`` marked (kind ``"span"``).

    Returns ``(segments, found)``; when the span is not in the passage the
    passage comes back as one plain segment and ``found`` is False (the page
    then shows the span on its own, flagged).
    """
    ranges = span_ranges(passage, span)
    if ranges is None:
        return [Segment(passage, "")], False
    segments: list[Segment] = []
    cursor = 0
    for start, end in ranges:
        segments.append(Segment(passage[cursor:start], ""))
        segments.append(Segment(passage[start:end], "span"))
        cursor = end
    segments.append(Segment(passage[cursor:], ""))
    return _merge(segments), True


def highlight_shared_words(passage: str, claim: str) -> list[Segment]:
    """Passage as segments with the words it shares with ``claim`` marked
    (kind ``"word"``), ignoring stopwords, case and plural ``s``.

    Adjacent marked words separated only by spaces or stopwords-free
    punctuation stay separate marks; runs of plain text are merged.
    """
    wanted = content_words(claim)
    if not wanted:
        return [Segment(passage, "")]
    segments: list[Segment] = []
    cursor = 0
    for match in _WORD.finditer(passage):
        word = _fold(match.group())
        if len(word) > 1 and word not in STOPWORDS and _stem(word) in wanted:
            segments.append(Segment(passage[cursor:match.start()], ""))
            segments.append(Segment(match.group(), "word"))
            cursor = match.end()
    segments.append(Segment(passage[cursor:], ""))
    return _join_close_marks([s for s in segments if s.text])


_GAP = re.compile(r"\s+(?:(\w+)\s+)?")


def _join_close_marks(segments: list[Segment]) -> list[Segment]:
    """Read "capital of France" as one mark: join two marked words separated by
    whitespace and at most one stopword."""
    out: list[Segment] = []
    for segment in segments:
        if (segment.kind == "word" and len(out) >= 2 and out[-2].kind == "word" and not out[-1].kind):
            gap = _GAP.fullmatch(out[-1].text)
            if gap and (gap.group(1) is None or _fold(gap.group(1)) in STOPWORDS):
                joined = out[-2].text + out[-1].text + segment.text
                out[-2:] = [Segment(joined, "word")]
                continue
        out.append(segment)
    return out


def passage_segments(passage: str, *, span: str, claim: str) -> tuple[list[Segment], bool]:
    """What the review page shows for one citation: the span marked when the
    citation has one and it is found, else the words shared with the claim.

    Returns ``(segments, span_found)``; ``span_found`` is True when there is no
    span to look for.
    """
    if span.strip():
        segments, found = highlight_span(passage, span)
        if found:
            return segments, True
        return highlight_shared_words(passage, claim), False
    return highlight_shared_words(passage, claim), True


class AnswerSegment(NamedTuple):
    text: str
    claim_id: int | None


def answer_segments(text: str, claims: Iterable[tuple[int, int | None, int | None]]) -> tuple[
        list[AnswerSegment], list[int]]:
    """Answer text cut at the claims' ``start``/``end`` offsets.

    ``claims`` yields ``(claim_id, start, end)``. Returns ``(segments,
    unplaced)``: segments cover the whole text in order, each with the claim it
    belongs to (or ``None`` between claims); ``unplaced`` lists the ids of
    claims without offsets, with offsets outside the text, or overlapping an
    earlier claim — the page lists those instead of marking them.
    """
    placed: list[tuple[int, int, int]] = []
    unplaced: list[int] = []
    for claim_id, start, end in claims:
        if start is None or end is None or end > len(text) or start >= end:
            unplaced.append(claim_id)
        else:
            placed.append((start, end, claim_id))
    placed.sort()
    segments: list[AnswerSegment] = []
    cursor = 0
    for start, end, claim_id in placed:
        if start < cursor:
            unplaced.append(claim_id)
            continue
        if start > cursor:
            segments.append(AnswerSegment(text[cursor:start], None))
        segments.append(AnswerSegment(text[start:end], claim_id))
        cursor = end
    if cursor < len(text):
        segments.append(AnswerSegment(text[cursor:], None))
    return segments, unplaced


# Where a claim may bundle two assertions, best first. Each pattern matches the
# whitespace to cut at, so the parts stay verbatim: the sentence end or the
# semicolon stays with the first part, a connective ("and", "but", …) opens
# the second.
_CONNECTIVE = r"(?:and|but|while|whereas)\s"
_BREAKS = (
    re.compile(r"(?<=\S[.!?])\s+(?=[\"“(\[]?[A-Z0-9])"),  # a sentence boundary
    re.compile(r"(?<=;)\s+"),
    re.compile(r"(?<=,)\s+(?=" + _CONNECTIVE + ")"),
    re.compile(r"\s+(?=" + _CONNECTIVE + ")"),
    re.compile(r"(?<=,)\s+"),
)


def suggest_split(text: str) -> tuple[str, str]:
    """Two parts ``text`` most likely bundles, to prefill the split form.

    Cuts at whitespace, so the parts are verbatim pieces of the claim and
    ``first + " " + second`` is ``text`` up to the whitespace at the cut: a
    claim located in the answer text stays located (and highlighted) after
    the split (``claim_edits.claim_split`` finds each part there). The cut is the
    break closest to the middle of the first kind present: a sentence
    boundary, ``"; "``, ``", and "`` (or but/while/whereas), ``" and "``,
    ``", "``; else the space closest to the middle. ``(text, "")`` when there
    is no whitespace at all.
    """
    text = text.strip()
    middle = len(text) / 2
    for pattern in _BREAKS:
        cuts = [m for m in pattern.finditer(text) if 0 < m.start() and m.end() < len(text)]
        if cuts:
            cut = min(cuts, key=lambda m: abs(m.start() - middle))
            return text[:cut.start()], text[cut.end():]
    spaces = [m for m in re.finditer(r"\s+", text)]
    if not spaces:
        return text, ""
    cut = min(spaces, key=lambda m: abs(m.start() - middle))
    return text[:cut.start()], text[cut.end():]
