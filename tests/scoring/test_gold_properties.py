"""Invariants of the gold-based metrics (SPEC §4, §4.3), checked with hypothesis
on small random answers: values in [0, 1] or None, swapping cited and gold
swaps precision and recall, row order changes nothing, pooled = mean when
every answer has the same counts."""

from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scoring.gold import gold_metrics
from scoring.matching import get_matcher

# A small vocabulary and few sources, so that passages and sources collide often
# enough for matches, partial matches and duplicates to show up.
WORDS = ["remote", "work", "vpn", "policy", "must", "use", "the", "office", "data", "days"]
SOURCES = ["A.pdf", "a.pdf ", "B.pdf", "https://www.c.org/doc/", ""]

passage = st.lists(st.sampled_from(WORDS), min_size=1, max_size=8).map(" ".join)
item = st.tuples(st.sampled_from(SOURCES), passage)
answer = st.fixed_dictionaries(
    {"citations": st.lists(item, max_size=5), "references": st.lists(item, max_size=5)}
)
answers_strategy = st.lists(answer, min_size=1, max_size=4)
PROPERTY_SETTINGS = settings(max_examples=80, deadline=None,
                             suppress_health_check=[HealthCheck.too_slow])


def build(answers: list[dict], *, swap: bool = False) -> tuple[pd.DataFrame, ...]:
    """Frames for ``answers``; expected sources = the references' sources, so
    that with ``swap`` (citations ↔ references) cited and expected sources swap too."""
    rows_a, rows_c, rows_r, rows_e = [], [], [], []
    for n, spec in enumerate(answers):
        cited, gold = spec["citations"], spec["references"]
        if swap:
            cited, gold = gold, cited
        answer_id = f"a{n}"
        rows_a.append({"answer_id": answer_id, "question_id": f"q{n % 2}",
                       "has_references": True, "has_expected_sources": True})
        rows_c += [{"answer_id": answer_id, "citation_id": f"{answer_id}c{k}", "source": s,
                    "text": t} for k, (s, t) in enumerate(cited)]
        rows_r += [{"answer_id": answer_id, "source": s, "text": t} for s, t in gold]
        rows_e += [{"answer_id": answer_id, "source": s} for s, _ in gold]
    return (
        pd.DataFrame(rows_a),
        pd.DataFrame(rows_c, columns=["answer_id", "citation_id", "source", "text"]),
        pd.DataFrame(rows_r, columns=["answer_id", "source", "text"]),
        pd.DataFrame(rows_e, columns=["answer_id", "source"]),
    )


RATIO_KEYS = ("precision", "recall", "f1", "mean_precision", "mean_recall", "mean_f1")


@pytest.mark.parametrize("method", ["substring", "ngram"])
@PROPERTY_SETTINGS
@given(answers=answers_strategy)
def test_values_are_ratios_or_none(method, answers):
    result = gold_metrics(*build(answers), matcher=get_matcher(method))
    for part in result.to_dict().values():
        for key in RATIO_KEYS:
            assert part[key] is None or 0.0 <= part[key] <= 1.0
    for row in result.per_answer_records():
        for key, value in row.items():
            if key.endswith(("_precision", "_recall", "_f1")):
                assert value is None or 0.0 <= value <= 1.0
        assert row["matched_citations"] <= row["citations"]
        assert row["matched_references"] <= row["references"]


@PROPERTY_SETTINGS
@given(answers=answers_strategy)
def test_swapping_cited_and_gold_swaps_precision_and_recall(answers):
    """ngram is symmetric (measured against the shorter passage), the source
    rule is symmetric and both sides are de-duplicated alike: so context
    precision ↔ recall and source precision ↔ recall, counts included."""
    matcher = get_matcher("ngram")
    straight = gold_metrics(*build(answers), matcher=matcher).to_dict()
    swapped = gold_metrics(*build(answers, swap=True), matcher=matcher).to_dict()
    for part in ("context", "source"):
        for key in ("", "mean_"):
            assert straight[part][f"{key}precision"] == swapped[part][f"{key}recall"]
            assert straight[part][f"{key}recall"] == swapped[part][f"{key}precision"]
        assert straight[part]["f1"] == swapped[part]["f1"]
    assert straight["context"]["matched_citations"] == swapped["context"]["matched_references"]
    assert straight["context"]["citations"] == swapped["context"]["references"]
    assert straight["source"]["cited_sources"] == swapped["source"]["expected_sources"]


@pytest.mark.parametrize("method", ["substring", "ngram"])
@PROPERTY_SETTINGS
@given(answers=answers_strategy, seed=st.integers(0, 2**16))
def test_permuting_rows_changes_nothing(method, answers, seed):
    matcher = get_matcher(method)
    frames = build(answers)
    shuffled = [frame.sample(frac=1.0, random_state=seed + k) for k, frame in enumerate(frames)]
    before = gold_metrics(*frames, matcher=matcher)
    after = gold_metrics(*shuffled, matcher=matcher)
    assert before.to_dict() == after.to_dict()
    assert before.per_answer_records() == after.per_answer_records()


@PROPERTY_SETTINGS
@given(matched=st.lists(st.integers(0, 3), min_size=1, max_size=6))
def test_pooled_equals_mean_when_every_answer_has_the_same_counts(matched):
    """Every answer cites 3 distinct passages and has the same 3 references;
    answer n cites ``matched[n]`` of them: pooled P = Σm/(3k) = mean of m/3."""
    texts = ["remote work policy", "vpn must use", "office data days"]
    others = ["the the the", "days days days", "use use use"]
    spec = [
        {
            "citations": [("A", texts[i] if i < m else others[i]) for i in range(3)],
            "references": [("A", text) for text in texts],
        }
        for m in matched
    ]
    context = gold_metrics(*build(spec), matcher=get_matcher("ngram")).context
    assert context.precision.value == pytest.approx(context.mean_precision)
    assert context.recall.value == pytest.approx(context.mean_recall)
