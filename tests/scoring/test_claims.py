"""Claim-level coverage, support and gap (SPEC §4.1, scoring.claims)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scoring.claims import claim_metrics, native_column, native_records, to_native
from scoring.labels import SUPPORTED, UNCITED, UNSUPPORTED, resolve_labels
from tests.scoring.checks import assert_no_nan

COLUMNS = ["answer_id", "question_id", "claim_index", "n_citations", "label"]


def claims_frame(answers: dict[object, list[tuple[int, str | None]]]) -> pd.DataFrame:
    """{answer_id: [(n_citations, label), ...]} -> claims frame, question_id = f"q{answer_id}"."""
    rows = [
        (answer_id, f"q{answer_id}", index, n_citations, label)
        for answer_id, claims in answers.items()
        for index, (n_citations, label) in enumerate(claims)
    ]
    return pd.DataFrame(rows, columns=COLUMNS)


def test_seed_five_claims_all_cited_three_supported():
    """Seed "Measure Citation Coverage and Support": 5 claims, all cited, claims
    1, 2, 4 SUPPORTED and 3, 5 UNSUPPORTED -> coverage 5/5 = 1.0 exactly,
    support 3/5 = 0.6, gap 1.0 - 0.6 = 0.4."""
    claims = claims_frame(
        {
            "sync": [
                (1, SUPPORTED),
                (1, SUPPORTED),
                (1, UNSUPPORTED),
                (1, SUPPORTED),
                (1, UNSUPPORTED),
            ]
        }
    )

    metrics = claim_metrics(claims)

    assert metrics.coverage.value == 1.0
    assert str(metrics.coverage) == "5/5 = 1.00"
    assert metrics.support.value == 0.6
    assert str(metrics.support) == "3/5 = 0.60"
    assert metrics.gap == 0.4
    assert metrics.mean_coverage == 1.0
    assert metrics.mean_support == 0.6


def test_pending_cited_claims_are_counted_and_left_out_of_support():
    """Answer a: 4 cited claims, 1 SUPPORTED, 1 UNSUPPORTED, 2 unlabeled -> pending 2,
    labeled cited 2, support 1/2 = 0.5 (provisional), coverage 4/4 = 1.0."""
    claims = claims_frame({"a": [(2, SUPPORTED), (1, UNSUPPORTED), (1, None), (3, None)]})

    metrics = claim_metrics(claims)

    assert (metrics.cited, metrics.labeled_cited, metrics.pending) == (4, 2, 2)
    assert metrics.support.value == 0.5
    assert metrics.coverage.value == 1.0


def test_uncited_claim_without_label_is_not_pending():
    """An uncited claim needs no reviewer (SPEC §3): 1 cited SUPPORTED + 1
    uncited null -> coverage 1/2, support 1/1, pending 0."""
    claims = claims_frame({"a": [(1, SUPPORTED), (0, None)]})

    metrics = claim_metrics(claims)

    assert metrics.pending == 0
    assert str(metrics.coverage) == "1/2 = 0.50"
    assert str(metrics.support) == "1/1 = 1.00"


def test_zero_denominators_give_null_never_nan():
    """Answer a: 2 uncited claims -> coverage 0/2 = 0.0 (a value), support 0/0 = None.
    Answer b: 1 cited pending claim -> coverage 1/1, support 0/0 = None.
    Pooled support 0/0 = None, so gap is None; no answer has a support, so
    mean_support is None with 2 skipped."""
    claims = claims_frame({"a": [(0, UNCITED), (0, UNCITED)], "b": [(1, None)]})

    metrics = claim_metrics(claims)
    summary = metrics.to_dict()

    assert summary["coverage"] == pytest.approx(1 / 3)
    assert summary["support"] is None
    assert summary["gap"] is None
    assert summary["mean_support"] is None
    assert summary["support_skipped"] == 2
    records = {record["answer_id"]: record for record in metrics.per_answer_records()}
    assert records["a"]["coverage"] == 0.0
    assert records["a"]["support"] is None
    assert_no_nan(summary)
    assert_no_nan(metrics.per_answer_records())


def test_no_claims_at_all_gives_nulls():
    metrics = claim_metrics(pd.DataFrame(columns=COLUMNS))

    assert metrics.to_dict() == {
        "claims": 0,
        "cited": 0,
        "labeled_cited": 0,
        "supported": 0,
        "unsupported": 0,
        "pending": 0,
        "coverage": None,
        "support": None,
        "gap": None,
        "mean_coverage": None,
        "mean_support": None,
        "coverage_skipped": 0,
        "support_skipped": 0,
        "supported_rate": None,
        "mean_supported_rate": None,
        "supported_rate_skipped": 0,
        "non_factual": 0,
    }
    assert metrics.answers == 0


def test_per_answer_mean_weights_answers_and_counts_skipped():
    """a: 1 claim, cited, SUPPORTED -> coverage 1/1, support 1/1.
    b: 4 claims, 1 cited UNSUPPORTED, 3 uncited -> coverage 1/4, support 0/1.
    c: 1 claim uncited -> coverage 0/1, support undefined (skipped).
    Pooled coverage = 2/6, support = 1/2.
    Mean coverage = (1 + 0.25 + 0) / 3 = 0.41666…, 0 skipped.
    Mean support = (1 + 0) / 2 = 0.5, 1 skipped."""
    claims = claims_frame(
        {
            "a": [(1, SUPPORTED)],
            "b": [(2, UNSUPPORTED), (0, UNCITED), (0, UNCITED), (0, UNCITED)],
            "c": [(0, UNCITED)],
        }
    )

    metrics = claim_metrics(claims)

    assert str(metrics.coverage) == "2/6 = 0.33"
    assert str(metrics.support) == "1/2 = 0.50"
    assert metrics.mean_coverage == pytest.approx(1.25 / 3)
    assert metrics.coverage_skipped == 0
    assert metrics.mean_support == 0.5
    assert metrics.support_skipped == 1


def test_answers_without_claims_appear_with_null_coverage():
    """Answers frame lists a (2 claims, both cited SUPPORTED) and z (no claims):
    2 answers, z has 0 claims and coverage None, skipped in both means."""
    claims = claims_frame({"a": [(1, SUPPORTED), (1, SUPPORTED)]})
    answers = pd.DataFrame({"answer_id": ["a", "z"], "question_id": ["qa", "qz"]})

    metrics = claim_metrics(claims, answers)

    assert metrics.answers == 2
    records = {record["answer_id"]: record for record in metrics.per_answer_records()}
    assert records["z"] == {
        "question_id": "qz",
        "answer_id": "z",
        "claims": 0,
        "cited": 0,
        "labeled_cited": 0,
        "supported": 0,
        "pending": 0,
        "coverage": None,
        "support": None,
        "supported_rate": None,
        "non_factual": 0,
    }
    assert (metrics.coverage_skipped, metrics.support_skipped) == (1, 1)
    assert metrics.mean_coverage == 1.0


def test_abstention_claims_are_excluded_and_its_ratios_null():
    """Answer a: 2 claims, 1 cited SUPPORTED, 1 uncited. Answer x abstains (SPEC
    §4.2): its 1 uncited claim "not found" is no factual claim. Counts: claims 2
    (not 3), coverage 1/2; x has coverage None and support None."""
    claims = claims_frame({"a": [(1, SUPPORTED), (0, UNCITED)], "x": [(0, UNCITED)]})
    claims["abstention"] = claims["answer_id"].eq("x")

    metrics = claim_metrics(claims)

    assert metrics.claims == 2
    assert str(metrics.coverage) == "1/2 = 0.50"
    assert metrics.abstentions == 1
    assert metrics.mean_coverage == 0.5
    assert metrics.coverage_skipped == 1
    x = metrics.per_answer.set_index("answer_id").loc["x"]
    assert (x["claims"], x["coverage"], x["support"], x["abstention"]) == (0, None, None, True)


def test_disagreement_from_resolve_labels_counts_as_pending():
    """Claim 1: both SUPPORTED; claim 2: ana SUPPORTED, ben UNSUPPORTED -> pending.
    Support 1/1, pending 1."""
    labels = pd.DataFrame(
        {
            "claim_id": [1, 1, 2, 2],
            "reviewer": ["ana", "ben", "ana", "ben"],
            "label": [SUPPORTED, SUPPORTED, SUPPORTED, UNSUPPORTED],
        }
    )
    claims = pd.DataFrame(
        {
            "claim_id": [1, 2],
            "answer_id": [10, 10],
            "question_id": ["q", "q"],
            "claim_index": [0, 1],
            "n_citations": [1, 1],
        }
    )
    claims = claims.merge(resolve_labels(labels)[["claim_id", "label"]], on="claim_id", how="left")

    metrics = claim_metrics(claims)

    assert (metrics.supported, metrics.labeled_cited, metrics.pending) == (1, 1, 1)


def test_per_answer_records_have_the_documented_keys():
    claims = claims_frame({"a": [(1, SUPPORTED)]})

    (record,) = claim_metrics(claims).per_answer_records()

    assert record == {
        "question_id": "qa",
        "answer_id": "a",
        "claims": 1,
        "cited": 1,
        "labeled_cited": 1,
        "supported": 1,
        "pending": 0,
        "coverage": 1.0,
        "support": 1.0,
        "supported_rate": 1.0,
        "non_factual": 0,
    }
    assert type(record["claims"]) is int


@pytest.mark.parametrize(
    "column",
    [
        pd.Series([1, 2, 3]),
        pd.Series([0.5, np.nan, 1.0]),
        pd.Series([True, False]),
        pd.Series([1, None, 3], dtype="Int64"),
        pd.Series([True, None], dtype="boolean"),
        pd.Series([0.5, None], dtype="Float64"),
        pd.Series(["a", None, "c"]),
        pd.Series(["a", None], dtype=object),
        pd.Series([0.5, None, pd.NA, np.float64(0.25), np.nan], dtype=object),
        pd.Series([1, np.int64(2)], dtype=object),
        pd.Series([1, None, np.int64(3)], dtype=object),
        pd.Series([1, 0.5, None, "x"], dtype=object),
        pd.Series([True, np.bool_(False)], dtype=object),
        pd.Series([2**70, 1], dtype=object),
        pd.Series([None, None], dtype=object),
        pd.Series([], dtype=object),
        pd.Series(["a", None], dtype="category"),
    ],
    ids=lambda column: str(column.dtype),
)
def test_native_column_is_to_native_cell_by_cell(column):
    """A column at a time gives what to_native gives cell by cell: same values, same Python types."""
    expected = [to_native(value) for value in column.astype(object).tolist()]
    got = native_column(column)
    assert got == expected and [type(v) for v in got] == [type(v) for v in expected]


def test_native_records_keep_the_frame_order_and_the_columns_asked_for():
    frame = pd.DataFrame({"a": ["x", "y"], "n": [1, 2], "r": [0.5, None]}, dtype=object).astype({"n": "int64"})
    assert native_records(frame) == [{"a": "x", "n": 1, "r": 0.5}, {"a": "y", "n": 2, "r": None}]
    assert native_records(frame, ("r", "a")) == [{"r": 0.5, "a": "x"}, {"r": None, "a": "y"}]
    assert native_records(frame.iloc[:0]) == []


@pytest.mark.parametrize(
    ("n_citations", "label", "message"),
    [
        (1, "GOOD", "unknown label value.*'GOOD'"),
        (1, UNCITED, "UNCITED if and only if no citation"),
        (0, SUPPORTED, "UNCITED if and only if no citation"),
        (-1, None, "negative n_citations"),
    ],
)
def test_invalid_claim_rejected(n_citations, label, message):
    claims = claims_frame({"a": [(n_citations, label)]})

    with pytest.raises(ValueError, match=message):
        claim_metrics(claims)


def test_missing_column_rejected():
    claims = claims_frame({"a": [(1, SUPPORTED)]}).drop(columns="n_citations")

    with pytest.raises(ValueError, match="lacks column.*n_citations"):
        claim_metrics(claims)


@st.composite
def claims_frames(draw, *, claims_per_answer: int | None = None) -> pd.DataFrame:
    """Consistent claims frames: cited claims SUPPORTED/UNSUPPORTED/pending,
    uncited claims UNCITED or unlabeled."""
    answers = {}
    for answer_id in range(draw(st.integers(1, 6))):
        count = claims_per_answer if claims_per_answer else draw(st.integers(0, 6))
        claims = []
        for _ in range(count):
            n_citations = draw(st.integers(0, 3))
            options = [SUPPORTED, UNSUPPORTED, None] if n_citations else [UNCITED, None]
            claims.append((n_citations, draw(st.sampled_from(options))))
        answers[answer_id] = claims
    return claims_frame(answers)


@settings(deadline=None, max_examples=60)
@given(claims_frames())
def test_ratios_are_in_unit_interval_or_null(claims):
    metrics = claim_metrics(claims)

    summary = metrics.to_dict()
    for key in ("coverage", "support", "mean_coverage", "mean_support"):
        assert summary[key] is None or 0.0 <= summary[key] <= 1.0
    for record in metrics.per_answer_records():
        for key in ("coverage", "support"):
            assert record[key] is None or 0.0 <= record[key] <= 1.0
    assert_no_nan(summary)
    assert_no_nan(metrics.per_answer_records())


@settings(deadline=None, max_examples=60)
@given(st.integers(1, 5).flatmap(lambda k: claims_frames(claims_per_answer=k)))
def test_pooled_coverage_equals_per_answer_mean_when_claim_counts_are_equal(claims):
    """k claims per answer: Σ cited_i / (n·k) = (1/n) Σ (cited_i / k)."""
    metrics = claim_metrics(claims)

    assert metrics.mean_coverage == pytest.approx(metrics.coverage.value, rel=1e-12)


@settings(deadline=None, max_examples=60)
@given(claims_frames(), st.randoms(use_true_random=False))
def test_permuting_rows_changes_nothing(claims, random):
    order = list(range(len(claims)))
    random.shuffle(order)

    metrics = claim_metrics(claims)
    shuffled = claim_metrics(claims.iloc[order])

    assert shuffled.to_dict() == metrics.to_dict()
    assert shuffled.per_answer_records() == metrics.per_answer_records()


def test_abstaining_answer_without_claims_counts_as_abstention():
    """Answer a: 1 cited SUPPORTED claim; answer x (answers frame only, abstention
    True) has no claims: 2 answers, 1 abstention, coverage 1/1."""
    claims = claims_frame({"a": [(1, SUPPORTED)]})
    answers = pd.DataFrame({"answer_id": ["a", "x"], "question_id": ["qa", "qx"], "abstention": [False, True]})

    metrics = claim_metrics(claims, answers)

    assert (metrics.answers, metrics.abstentions) == (2, 1)
    assert str(metrics.coverage) == "1/1 = 1.00"
