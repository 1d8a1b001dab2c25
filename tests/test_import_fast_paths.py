"""The answers import's shortcuts give what the full checks give (issue 24:
speed). Each shortcut is put against the check it stands in for, over every
character or value that could tell them apart."""

from __future__ import annotations

import json

import pytest

from labeling.importers.answer_labels import item_str, optional_str
from labeling.importers.answers_jsonl import _may_hold_refused, iter_answer_records
from labeling.importers.markers import find_markers, marker_problems
from labeling.names import text_problem

# Every control character, the surrogates' edges, and characters that are fine.
CHARACTERS = [chr(code) for code in range(0x20)] + ["\x7f", "\ud800", "\udbff", "\udc00", "\udfff", "é", "€", "\\"]


@pytest.mark.parametrize("ensure_ascii", [True, False])
@pytest.mark.parametrize("character", CHARACTERS, ids=lambda c: f"U+{ord(c):04X}")
def test_a_line_whose_strings_may_be_refused_is_never_waved_through(character, ensure_ascii):
    line = json.dumps({"answer": f"It retries{character} five times", "document": character},
                      ensure_ascii=ensure_ascii)
    decoded = json.loads(line)
    refused = any(text_problem(value) for value in decoded.values())
    if refused:
        assert _may_hold_refused(line)


def test_only_lines_that_may_hold_a_refused_string_are_walked():
    assert _may_hold_refused(json.dumps({"answer": "a\u0000b"}))
    assert _may_hold_refused(json.dumps({"answer": "a\x0bb"}))
    assert _may_hold_refused('{"answer": "a\ud800b"}')
    assert not _may_hold_refused(json.dumps({"answer": "line one\nline two\t\"quoted\" é €"}, ensure_ascii=False))
    assert not _may_hold_refused(json.dumps({"answer": "plain text"}))


@pytest.mark.parametrize("character", [chr(code) for code in range(0x20)], ids=lambda c: f"U+{ord(c):04X}")
def test_a_raw_control_character_never_reaches_a_string(character):
    # Why the shortcut need not look for raw control characters: json.loads refuses them.
    issues = [issue for _n, record, issues in iter_answer_records(
        [f'{{"question_id": "q1", "question": "Why?", "run": "r", "answer": "a{character}b"}}'])
        for issue in issues if record is None]
    assert [issue.field for issue in issues] == ["(line)"]
    assert issues[0].reason.startswith("invalid JSON: Invalid control character")


def test_a_str_line_with_a_raw_surrogate_is_refused_with_its_field():
    [(_number, record, issues)] = list(iter_answer_records(
        ['{"question_id": "q1", "question": "Why\ud800?", "run": "r", "answer": "a", "claims": []}']))
    assert record is None
    assert [issue.field for issue in issues] == ["question"]


@pytest.mark.parametrize("text", [
    "A [1][2] b【4】 c [sic] d [citation needed] e [1-].",
    "No markers at all.",
    "[1,,2] and [3-1] and [1-500] and [P1-d3] and [P2].",
    "",
])
def test_marker_problems_are_find_markers_problems(text):
    assert marker_problems(text) == find_markers(text)[1]


@pytest.mark.parametrize("value", ["text", "", None, 3, 2.5, True, ["a"], {"a": 1}])
def test_item_str_is_optional_str_of_the_item(value):
    by_item, by_value = [], []
    got = item_str({"span": value}, "span", "claims[0].citations[1]", lambda *p: by_item.append(p))
    expected = optional_str(value, "claims[0].citations[1].span", lambda *p: by_value.append(p))
    assert (got, by_item) == (expected, by_value)
    assert item_str({}, "span", "claims[0]", lambda *p: by_item.append(p)) == "" and by_item == by_value
