"""Inline citation markers (SPEC §6): every documented form parses; a bracket
that looks like a marker but cannot be parsed is reported."""

import pytest

from labeling.importers.markers import MarkerError, find_markers, parse_marker_content, split_claims


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
