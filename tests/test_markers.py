"""Inline citation markers (SPEC §6): every documented form parses; a bracket
that looks like a marker but cannot be parsed is reported."""

import pytest

from labeling.importers.markers import MarkerError, find_markers, parse_marker_content, split_claims
from labeling.review.highlight import span_ranges
from scoring.compare import claim_key
from scoring.matching import substring_match


@pytest.mark.parametrize(
    ("content", "ids"),
    [("P1", ("P1",)), ("1", ("1",)), ("d4", ("d4",)), ("1, 3", ("1", "3")), ("2-4", ("2", "3", "4")),
     ("1; 2", ("1", "2")), ("P2-P4", ("P2", "P3", "P4")), ("2–3", ("2", "3"))],
)
def test_marker_forms_parse_to_ids(content, ids):
    assert parse_marker_content(content) == ids


@pytest.mark.parametrize("content", ["1,,2", "3-1", "1-500", "P1-d3", "1 2 x"])
def test_malformed_markers_raise(content):
    with pytest.raises(MarkerError):
        parse_marker_content(content)


def test_adjacent_and_full_width_markers_are_found_and_plain_brackets_ignored():
    markers, problems = find_markers("A [1][2] b【4】 c [sic] d [citation needed] e [1-].")
    assert [m.ids for m in markers] == [("1",), ("2",), ("4",)]
    assert problems == ["unparseable citation marker '[1-]' at character 44: '1-' is not a passage id"]


def test_markers_opening_a_sentence_belong_to_the_previous_one():
    claims, problems = split_claims("Backoff is exponential. [2] Runs are logged [3].")
    assert [(c.text, c.cited_ids) for c in claims] == [
        ("Backoff is exponential. [2]", ("2",)), ("Runs are logged [3].", ("3",))]
    assert problems == []


def test_other_scripts_digits_become_ascii_ids():
    assert parse_marker_content("١") == ("1",)
    assert parse_marker_content("P𝟙") == ("P1",)


# -- one definition of a marker and of an ellipsis (scoring.normalize) ----------------------------

@pytest.mark.parametrize(
    ("text", "key", "ids"),
    [
        ("Retries use backoff [1].", "retries use backoff.", [("1",)]),
        ("Retries use backoff 【4】.", "retries use backoff.", [("4",)]),
        ("Retries use backoff [sic].", "retries use backoff [sic].", []),
        # 41 characters inside: too long for a marker, so neither cited nor stripped.
        ("Backoff [" + "1, " * 13 + "12].", "backoff [" + "1, " * 13 + "12].", []),
        # A bracket across a line break is text too.
        ("Backoff [1\n2].", "backoff [1 2].", []),
    ],
)
def test_comparison_strips_exactly_the_markers_the_importer_cites(text, key, ids):
    """Run comparison compares claims without their markers (SPEC §5); what it
    strips is what the importer turns into citations (SPEC §6)."""
    markers, _problems = find_markers(text)

    assert [m.ids for m in markers] == ids
    assert claim_key(text) == key


@pytest.mark.parametrize("elision", ["…", "...", "[...]", "(…)", "...."])
def test_highlight_and_substring_match_split_a_span_on_the_same_ellipses(elision):
    span = f"exponential backoff {elision} up to five times"
    passage = "Clients retry with exponential backoff, waiting longer each time, up to five times."

    ranges = span_ranges(passage, span)

    assert [passage[start:end] for start, end in ranges or []] == ["exponential backoff", "up to five times"]
    assert substring_match(span, passage) is True
