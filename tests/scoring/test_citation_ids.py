"""Cited ids vs gold ids, fabricated ids, abstention (SPEC §4.2, scoring.citation_ids)."""

from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scoring.citation_ids import abstention_metrics, citation_id_metrics
from scoring.claims import claim_metrics
from scoring.labels import SUPPORTED, UNCITED
from tests.scoring.checks import assert_no_nan


def answers_frame(rows: list[tuple[object, bool, bool | None]]) -> pd.DataFrame:
    """[(answer_id, has_gold, answerable)], question_id = f"q{answer_id}"."""
    return pd.DataFrame(
        [(answer_id, f"q{answer_id}", has_gold, answerable) for answer_id, has_gold, answerable in rows],
        columns=["answer_id", "question_id", "has_gold", "answerable"],
    )


def citations_frame(rows: list[tuple]) -> pd.DataFrame:
    """[(answer_id, passage_id)] or [(answer_id, passage_id, fabricated)]."""
    return pd.DataFrame(
        [(*row, False) if len(row) == 2 else row for row in rows],
        columns=["answer_id", "passage_id", "fabricated"],
    )


def gold_frame(rows: list[tuple[object, str]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["answer_id", "passage_id"])


def seed_frames() -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Seed "Citation Precision and Recall": ({d1},{d1}), ({d1,d4},{d1}),
    ({d2},{d2,d3}), ({},{d5})."""
    answers = answers_frame([(1, True, None), (2, True, None), (3, True, None), (4, True, None)])
    citations = citations_frame([(1, "d1"), (2, "d1"), (2, "d4"), (3, "d2")])
    gold = gold_frame([(1, "d1"), (2, "d1"), (3, "d2"), (3, "d3"), (4, "d5")])
    return answers, citations, gold


def test_seed_four_answers_precision_three_quarters_recall_three_fifths():
    """tp = 1 + 1 + 1 + 0 = 3, fp = 0 + 1 + 0 + 0 = 1, fn = 0 + 0 + 1 + 1 = 2:
    precision 3/4 = 0.75, recall 3/5 = 0.60, exactly."""
    metrics = citation_id_metrics(*seed_frames())

    assert (metrics.tp, metrics.fp, metrics.fn) == (3, 1, 2)
    assert metrics.precision.value == 0.75
    assert metrics.recall.value == 0.6
    assert str(metrics.precision) == "3/4 = 0.75"
    assert str(metrics.recall) == "3/5 = 0.60"


def test_seed_per_answer_means_skip_the_answer_that_cites_nothing():
    """Precision per answer 1, 1/2, 1, undefined (cites nothing) -> mean 2.5/3, 1 skipped.
    Recall per answer 1, 1, 1/2, 0 -> mean 2.5/4 = 0.625, 0 skipped."""
    metrics = citation_id_metrics(*seed_frames())

    assert metrics.mean_precision == pytest.approx(2.5 / 3)
    assert metrics.precision_skipped == 1
    assert metrics.mean_recall == 0.625
    assert metrics.recall_skipped == 0
    records = {record["answer_id"]: record for record in metrics.per_answer_records()}
    assert records[4]["precision"] is None
    assert records[4]["recall"] == 0.0


def test_same_id_cited_twice_counts_once():
    """Answer 1 cites d1 twice in one claim and again in another, plus d2; gold {d1}:
    cited set {d1, d2} -> tp 1, fp 1, distinct cited 2."""
    answers = answers_frame([(1, True, None)])
    citations = citations_frame([(1, "d1"), (1, "d1"), (1, "d1"), (1, "d2")])
    gold = gold_frame([(1, "d1"), (1, "d1")])

    metrics = citation_id_metrics(answers, citations, gold)

    assert (metrics.tp, metrics.fp, metrics.fn) == (1, 1, 0)
    assert metrics.distinct_cited == 2


def test_fabricated_id_is_never_a_true_positive_even_when_gold_lists_it():
    """Answer 1 cites d1 (sent) and d9 (not sent: fabricated); gold {d1, d9}.
    d9 counts as fp, and gold's d9 stays fn: tp 1, fp 1, fn 1.
    Fabricated 1 of 2 distinct cited ids."""
    answers = answers_frame([(1, True, None)])
    citations = citations_frame([(1, "d1", False), (1, "d9", True)])
    gold = gold_frame([(1, "d1"), (1, "d9")])

    metrics = citation_id_metrics(answers, citations, gold)

    assert (metrics.tp, metrics.fp, metrics.fn) == (1, 1, 1)
    assert str(metrics.fabricated_rate) == "1/2 = 0.50"


def test_fabricated_counts_distinct_pairs_over_all_answers():
    """Answer 1 (gold) cites x twice, fabricated; answer 2 (no gold) cites x and y,
    y fabricated; answer 3 (no gold) cites x. Distinct (answer, id) pairs:
    (1,x) (2,x) (2,y) (3,x) = 4, fabricated (1,x) (2,y) = 2 -> rate 2/4."""
    answers = answers_frame([(1, True, None), (2, False, None), (3, False, None)])
    citations = citations_frame([(1, "x", True), (1, "x", True), (2, "x", False), (2, "y", True), (3, "x", False)])

    metrics = citation_id_metrics(answers, citations, gold_frame([(1, "z")]))

    assert (metrics.fabricated, metrics.distinct_cited) == (2, 4)
    assert metrics.fabricated_rate.value == 0.5
    assert (metrics.tp, metrics.fp, metrics.fn) == (0, 1, 1)


def test_answers_without_gold_add_nothing_to_precision_and_recall():
    """Answer 1 (gold {a}) cites a; answer 2 has no gold and cites b, c.
    Only answer 1 counts: tp 1, fp 0, fn 0 -> precision 1/1, recall 1/1."""
    answers = answers_frame([(1, True, None), (2, False, None)])
    citations = citations_frame([(1, "a"), (2, "b"), (2, "c")])

    metrics = citation_id_metrics(answers, citations, gold_frame([(1, "a")]))

    assert str(metrics.precision) == "1/1 = 1.00"
    assert metrics.recall.value == 1.0
    assert metrics.gold_answers == 1
    without_gold = metrics.per_answer_records()[1]
    assert (without_gold["tp"], without_gold["precision"], without_gold["cited"]) == (None, None, 2)


def test_unanswerable_question_with_empty_gold():
    """Gold = [] (has_gold, answerable False). Answer 1 cites p -> fp 1, precision 0/1,
    recall 0/0 = None. Answer 2 cites nothing -> both None. Pooled: tp 0, fp 1, fn 0:
    precision 0/1 = 0.0, recall 0/0 = None; recall skipped for both answers."""
    answers = answers_frame([(1, True, False), (2, True, False)])
    citations = citations_frame([(1, "p")])

    metrics = citation_id_metrics(answers, citations, gold_frame([]))
    summary = metrics.to_dict()

    assert summary["precision"] == 0.0
    assert summary["recall"] is None
    assert summary["mean_recall"] is None
    assert metrics.recall_skipped == 2
    assert metrics.precision_skipped == 1
    assert_no_nan(summary)
    assert_no_nan(metrics.per_answer_records())


def test_nothing_to_score_gives_nulls_never_nan():
    metrics = citation_id_metrics(answers_frame([]), citations_frame([]), gold_frame([]))

    assert metrics.to_dict() == {
        "tp": 0,
        "fp": 0,
        "fn": 0,
        "precision": None,
        "recall": None,
        "mean_precision": None,
        "mean_recall": None,
        "fabricated": 0,
        "fabricated_rate": None,
        "distinct_cited": 0,
    }


def test_gold_ids_on_answer_without_gold_rejected():
    answers = answers_frame([(1, False, None)])

    with pytest.raises(ValueError, match="has_gold is False: 1"):
        citation_id_metrics(answers, citations_frame([]), gold_frame([(1, "a")]))


def test_citation_of_unknown_answer_rejected():
    answers = answers_frame([(1, True, None)])

    with pytest.raises(ValueError, match="not in answers: 99"):
        citation_id_metrics(answers, citations_frame([(99, "a")]), gold_frame([]))


def test_duplicated_answer_rejected():
    answers = answers_frame([(1, True, None), (1, True, None)])

    with pytest.raises(ValueError, match="more than once: 1"):
        citation_id_metrics(answers, citations_frame([]), gold_frame([]))


def test_abstention_rate_over_unanswerable_questions():
    """Unanswerable: answers 1, 2, 3 (answerable False). 1 cites nothing, 2 cites a
    fabricated id (still a citation), 3 cites nothing -> abstained 2/3.
    Answer 4 (answerable None: unknown) and 5 (True) are not unanswerable."""
    answers = answers_frame([(1, True, False), (2, True, False), (3, True, False), (4, False, None), (5, False, True)])
    citations = citations_frame([(2, "zz", True), (5, "a")])

    metrics = abstention_metrics(answers, citations)

    assert metrics.to_dict() == {"unanswerable": 3, "abstained": 2, "rate": 2 / 3}
    assert str(metrics.rate) == "2/3 = 0.67"
    assert metrics.per_answer["abstained"].tolist() == [True, False, True, False, False]


def test_abstention_rate_null_without_unanswerable_questions():
    answers = answers_frame([(1, False, True), (2, False, None)])

    metrics = abstention_metrics(answers, citations_frame([]))

    assert metrics.to_dict() == {"unanswerable": 0, "abstained": 0, "rate": None}


def test_abstained_flag_feeds_claim_metrics():
    """Answer 1 abstains ("not found", uncited); answer 2 has one cited SUPPORTED
    claim. Coverage counts answer 2 only: 1/1; answer 1's coverage is None."""
    answers = answers_frame([(1, True, False), (2, False, True)])
    abstention = abstention_metrics(answers, citations_frame([(2, "a")]))
    claims = pd.DataFrame(
        {
            "answer_id": [1, 2],
            "question_id": ["q1", "q2"],
            "claim_index": [0, 0],
            "n_citations": [0, 1],
            "label": [UNCITED, SUPPORTED],
        }
    )
    claims = claims.merge(
        abstention.per_answer[["answer_id", "abstained"]].rename(columns={"abstained": "abstention"}),
        on="answer_id",
    )

    metrics = claim_metrics(claims)

    assert str(metrics.coverage) == "1/1 = 1.00"
    assert metrics.per_answer_records()[0]["coverage"] is None


IDS = st.sampled_from(["a", "b", "c", "d"])


@st.composite
def id_frames(draw):
    n_answers = draw(st.integers(0, 5))
    rows = [(i, draw(st.booleans()), draw(st.sampled_from([True, False, None]))) for i in range(n_answers)]
    answers = answers_frame(rows)
    citations, gold = [], []
    for answer_id, has_gold, _ in rows:
        for passage_id in draw(st.lists(IDS, max_size=6)):
            citations.append((answer_id, passage_id, draw(st.booleans())))
        if has_gold:
            gold += [(answer_id, passage_id) for passage_id in draw(st.lists(IDS, max_size=4))]
    return answers, citations_frame(citations), gold_frame(gold)


@settings(deadline=None, max_examples=60)
@given(id_frames())
def test_citation_ratios_are_in_unit_interval_or_null(frames):
    metrics = citation_id_metrics(*frames)

    summary = metrics.to_dict()
    for key in ("precision", "recall", "mean_precision", "mean_recall", "fabricated_rate"):
        assert summary[key] is None or 0.0 <= summary[key] <= 1.0
    assert_no_nan(summary)
    assert_no_nan(metrics.per_answer_records())


@settings(deadline=None, max_examples=60)
@given(id_frames(), st.randoms(use_true_random=False))
def test_permuting_citation_rows_changes_nothing(frames, random):
    answers, citations, gold = frames
    shuffled = [frame.sample(frac=1, random_state=random.randrange(2**32)) for frame in frames]

    assert citation_id_metrics(*shuffled).to_dict() == citation_id_metrics(*frames).to_dict()
    assert abstention_metrics(shuffled[0], shuffled[1]).to_dict() == abstention_metrics(answers, citations).to_dict()
