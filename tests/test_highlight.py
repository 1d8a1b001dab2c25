"""Highlight segments and split suggestions (labeling.review.highlight): a cited span
marked in its passage (or the words it shares with the claim), claims placed in
the answer text, and the verbatim cut a split form proposes."""

from __future__ import annotations

import json

from labeling.review.highlight import Segment, answer_segments, passage_segments, suggest_split


def test_span_with_ellipsis_marks_each_part_in_order():
    segments, found = passage_segments("Alpha beta gamma delta epsilon.", span="beta … delta", claim="")

    assert found
    assert segments == [Segment("Alpha ", ""), Segment("beta", "span"), Segment(" gamma ", ""),
                        Segment("delta", "span"), Segment(" epsilon.", "")]


def test_span_matches_across_case_and_whitespace():
    segments, found = passage_segments("The  Capital\nof France.", span="capital of france", claim="")

    assert found and segments[1] == Segment("Capital\nof France", "span")


def test_span_not_in_passage_falls_back_to_shared_words():
    segments, found = passage_segments("Cats sleep a lot.", span="dogs bark", claim="cats sleeping")

    assert not found
    assert segments == [Segment("Cats", "word"), Segment(" sleep a lot.", "")]


def test_answer_segments_list_claims_without_offsets_or_overlapping():
    segments, unplaced = answer_segments("One. Two. Three.", [(1, 0, 4), (2, 2, 8), (3, None, None), (4, 10, 16)])

    assert [(s.text, s.claim_id) for s in segments] == [("One.", 1), (" Two. ", None), ("Three.", 4)]
    assert unplaced == [3, 2]


def test_split_suggestion_cuts_at_the_clause_break():
    """Verbatim parts: the connective opens the second part, nothing is added or recased."""
    assert suggest_split("Paris is the capital of France and it has two million inhabitants.") == (
        "Paris is the capital of France", "and it has two million inhabitants.")
    assert suggest_split("Paris is old; it has a river, and it is big.") == (
        "Paris is old;", "it has a river, and it is big.")
    assert suggest_split("Lyon is big, and it has a river.") == ("Lyon is big,", "and it has a river.")
    assert suggest_split("Short.") == ("Short.", "")


def test_split_suggestion_prefers_a_sentence_boundary_and_keeps_markers():
    assert suggest_split("Paris is old [1]. It has a river, and a cathedral [2].") == (
        "Paris is old [1].", "It has a river, and a cathedral [2].")
    # "e.g. the" is no sentence boundary (lower case follows).
    assert suggest_split("Rivers, e.g. the Seine, flood. Paris floods too.") == (
        "Rivers, e.g. the Seine, flood.", "Paris floods too.")


def test_split_suggestion_of_every_real_claim_is_verbatim(expertqa_path):
    """For each of the 735 claims of fixtures/expertqa_dev.jsonl, the two suggested parts put
    back together with the whitespace at the cut are the claim itself."""
    claims = [claim["text"].strip() for line in expertqa_path.read_text(encoding="utf-8").splitlines()
              for claim in json.loads(line)["claims"]]
    assert len(claims) == 735
    for text in claims:
        first, second = suggest_split(text)
        if not second:
            assert first == text
            continue
        assert text.startswith(first) and text.endswith(second)
        assert first and second and text[len(first):len(text) - len(second)].isspace()
