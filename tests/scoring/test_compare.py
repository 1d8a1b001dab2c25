"""Run comparison without Django (SPEC §5): scoring.compare on hand-built frames."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scoring.compare import RunFrames, align_claims, claim_key, compare_runs
from scoring.deltas import format_delta

S, U, N = "SUPPORTED", "UNSUPPORTED", "UNCITED"
CLAIM_COLUMNS = ["claim_id", "answer_id", "question_id", "claim_index", "claim", "n_citations", "label"]


def run(name: str, claims: list[tuple], citations: list[tuple] = (), answers=None, gold_ids=None) -> RunFrames:
    """``claims``: (claim_id, answer_id, question_id, index, text, n_citations, label);
    ``citations``: (claim_id, passage_id, source)."""
    return RunFrames(
        name=name,
        claims=pd.DataFrame(claims, columns=CLAIM_COLUMNS),
        citations=pd.DataFrame(list(citations), columns=["claim_id", "passage_id", "source"]),
        answers=answers,
        gold_ids=gold_ids,
    )


# The seed's five claims ("Measure Citation Coverage and Support"): all cited, 3 supported.
SEED_A = run(
    "v1",
    [
        (1, 10, "q1", 1, "The sync client retries transient failures up to five times. [P1]", 1, S),
        (2, 10, "q1", 2, "Retries use exponential backoff. [P1]", 1, S),
        (3, 10, "q1", 3, "Authentication failures are never retried. [P2]", 1, U),
        (4, 10, "q1", 4, "Sync runs are logged locally. [P3]", 1, S),
        (5, 10, "q1", 5, "The default retry limit can be raised through configuration. [P1]", 1, U),
    ],
    [(1, "P1", "client.md"), (2, "P1", "client.md"), (3, "P2", "errors.md"), (4, "P3", "audit.md"),
     (5, "P1", "client.md")],
)


def seed_b() -> RunFrames:
    """v2 of the seed answer: claim 2 loses its citation, claim 3 is reworded and
    now SUPPORTED, claim 4 cites another source, claim 5 is dropped, a sixth claim
    is new and pending."""
    return run(
        "v2",
        [
            (21, 20, "q1", 1, "The sync client retries transient failures up to five times. [1]", 1, S),
            (22, 20, "q1", 2, "Retries use exponential backoff.", 0, N),
            (23, 20, "q1", 3, "Authentication failures are not retried. [2]", 1, S),
            (24, 20, "q1", 4, "Sync runs are logged locally. [3]", 1, S),
            (26, 20, "q1", 5, "Permanent errors surface immediately to the caller. [2]", 1, None),
        ],
        [(21, "1", "client.md"), (23, "2", "errors.md"), (24, "3", "runbook.md"), (26, "2", "errors.md")],
    )


def test_claim_key_strips_markers_and_normalizes():
    assert claim_key("Retries use backoff [1].") == "retries use backoff."
    assert claim_key("retries  use\u00a0backoff [P2, P3] .") == "retries use backoff."
    assert claim_key("Retries use backoff【4】[2-4]") == "retries use backoff"
    # [sic] is text, not a marker
    assert claim_key("It said [sic] so.") == "it said [sic] so."


def test_seed_comparison_names_each_label_flip():
    """Aligned pairs: 1↔21, 2↔22, 4↔24 by equal keys; 3↔23 by similarity
    ("authentication failures are never retried." vs "… are not retried.": 42 and
    40 characters, Indel distance 6 → (82 − 6) / 82 = 0.927 ≥ 0.85). Claim 5 and
    claim 26 (60 and 51 characters, distance 69 → 42 / 111 = 0.378) stay apart:
    removed and added.

    Flips (label given on both sides and different): 2 SUPPORTED→UNCITED and
    3 UNSUPPORTED→SUPPORTED. Claim 1 and 4 keep SUPPORTED.
    """
    comparison = compare_runs(SEED_A, seed_b())
    flips = comparison.label_flips
    assert list(zip(flips["claim_index_a"], flips["label_a"], flips["label_b"], strict=True)) == [
        (2, S, N), (3, U, S),
    ]
    assert flips["match"].tolist() == ["exact", "fuzzy"]
    assert flips.loc[1, "similarity"] == pytest.approx(76 / 82)
    assert flips.loc[1, "claim_b"] == "Authentication failures are not retried. [2]"


def test_seed_comparison_names_gained_lost_and_changed_citations():
    """Claim 2 cited client.md and now cites nothing (lost); claim 4 moved from
    audit.md to runbook.md (changed). Claim 1 cites [1] instead of [P1] but the
    same source: no change."""
    changes = compare_runs(SEED_A, seed_b()).citation_changes
    assert changes[["claim_index_a", "change"]].values.tolist() == [[2, "lost"], [4, "changed"]]
    assert changes["sources_lost"].tolist() == [("client.md",), ("audit.md",)]
    assert changes["sources_gained"].tolist() == [(), ("runbook.md",)]


def test_uncited_claim_that_gains_a_citation_is_named():
    a = run("a", [(1, 1, "q", 1, "Water boils at 100 C.", 0, N)])
    b = run("b", [(2, 2, "q", 1, "Water boils at 100 C. [1]", 1, S)], [(2, "1", "")])
    changes = compare_runs(a, b).citation_changes
    assert changes["change"].tolist() == ["gained"]
    # a citation without a source is shown by its id
    assert changes["sources_gained"].tolist() == [("[1]",)]


def test_seed_comparison_names_added_and_removed_claims():
    comparison = compare_runs(SEED_A, seed_b())
    assert comparison.removed["claim_a"].tolist() == [
        "The default retry limit can be raised through configuration. [P1]"
    ]
    assert comparison.added["claim_b"].tolist() == ["Permanent errors surface immediately to the caller. [2]"]
    assert comparison.counts() == {
        "aligned": 4, "exact": 3, "fuzzy": 1, "label_flips": 2, "citation_changes": 2, "added": 1, "removed": 1,
    }


def test_seed_comparison_deltas_are_exact():
    """A: coverage 5/5, support 3/5, gap 1 − 3/5 = 2/5.
    B: 5 claims, 4 cited → coverage 4/5; labeled cited 3 (claim 26 pending), all
    SUPPORTED → support 3/3 = 1; gap 4/5 − 1 = −1/5.
    Deltas: coverage 4/5 − 1 = −1/5 = −0.2; support 1 − 3/5 = 0.4; gap −1/5 − 2/5 = −0.6.
    """
    comparison = compare_runs(SEED_A, seed_b())
    coverage, support, gap = (comparison.metric(k) for k in ("coverage", "support", "gap"))
    assert (coverage.a, coverage.b, coverage.delta) == (1.0, 0.8, -0.2)
    assert (support.a, support.b, support.delta) == (0.6, 1.0, 0.4)
    assert (gap.a, gap.b, gap.delta) == (0.4, -0.2, -0.6)
    assert (coverage.a_text, support.a_text, support.b_text) == ("5/5 = 1.00", "3/5 = 0.60", "3/3 = 1.00 (1 pending)")
    per_question = comparison.per_question.iloc[0]
    assert (per_question["coverage_delta"], per_question["support_delta"], per_question["gap_delta"]) == (
        -0.2, 0.4, -0.6)
    assert per_question[["label_flips", "citation_changes", "added", "removed", "aligned"]].tolist() == [2, 2, 1, 1, 4]
    assert per_question["pending_b"] == 1


def test_three_quarters_minus_three_fifths_is_exactly_fifteen_hundredths():
    """Support 3/5 → 3/4: the delta is the float nearest 3/20, not 0.75 − 0.6 =
    0.15000000000000002."""
    a = run("a", [(i, 1, "q", i, f"claim {i}", 1, S if i <= 3 else U) for i in range(1, 6)])
    b = run("b", [(10 + i, 2, "q", i, f"claim {i}", 1, S if i <= 3 else U) for i in range(1, 5)])
    assert compare_runs(a, b).metric("support").delta == 0.15


def test_fuzzy_alignment_threshold_is_inclusive_and_exact():
    """Keys "limit: 5." (9 chars) and "limit: 5 s." (11 chars): the first is a
    subsequence of the second, Indel distance 2, similarity (20 − 2) / 20 = 0.9
    exactly. At threshold 0.9 they pair; at 0.91 one is removed, one added."""
    a = run("a", [(1, 1, "q", 1, "Limit: 5.", 0, N)])
    b = run("b", [(2, 2, "q", 1, "Limit: 5 s.", 0, N)])
    at = compare_runs(a, b, threshold=0.9)
    assert at.alignment[["status", "match"]].values.tolist() == [["aligned", "fuzzy"]]
    assert at.alignment.loc[0, "similarity"] == 0.9
    above = compare_runs(a, b, threshold=0.91)
    assert sorted(above.alignment["status"]) == ["added", "removed"]
    assert above.counts()["aligned"] == 0


def test_fuzzy_alignment_is_one_to_one_best_score_first():
    """A's "retries five times." pairs exactly with B's and is taken out first.
    The leftovers "retries five times!" (19 characters) and "retries six
    times." (18) are at Indel distance 7: (37 − 7) / 37 = 0.81 < 0.85, so A's is
    removed and B's added — a claim already paired is never reused."""
    a = run("a", [(1, 1, "q", 1, "Retries five times.", 0, N), (2, 1, "q", 2, "Retries five times!", 0, N)])
    b = run("b", [(3, 2, "q", 1, "Retries five times.", 0, N), (4, 2, "q", 2, "Retries six times.", 0, N)])
    alignment = compare_runs(a, b).alignment
    pairs = alignment.loc[alignment["status"] == "aligned", ["claim_id_a", "claim_id_b", "match"]].values.tolist()
    assert pairs == [[1, 3, "exact"]]
    assert alignment.loc[alignment["status"] == "removed", "claim_id_a"].tolist() == [2]
    assert alignment.loc[alignment["status"] == "added", "claim_id_b"].tolist() == [4]


def test_greedy_gives_the_contested_claim_to_the_closest_text():
    """B's "the cache holds 10 items." is similar to both A claims; A's "the
    cache holds 10 items!" is closer (1 character swapped: (50 − 2) / 50 = 0.96)
    than "the cache holds 12 items!" ((50 − 4) / 50 = 0.92), so it wins; the other
    stays removed."""
    a = run("a", [(1, 1, "q", 1, "The cache holds 12 items!", 0, N), (2, 1, "q", 2, "The cache holds 10 items!", 0, N)])
    b = run("b", [(3, 2, "q", 1, "The cache holds 10 items.", 0, N)])
    alignment = compare_runs(a, b).alignment
    aligned = alignment[alignment["status"] == "aligned"]
    assert aligned[["claim_id_a", "claim_id_b"]].values.tolist() == [[2, 3]]
    assert aligned["similarity"].tolist() == [0.96]
    assert alignment.loc[alignment["status"] == "removed", "claim_id_a"].tolist() == [1]


def test_repeated_claims_pair_in_order():
    a = run("a", [(1, 1, "q", 1, "Yes.", 0, N), (2, 1, "q", 2, "Yes.", 0, N), (3, 1, "q", 3, "Yes.", 0, N)])
    b = run("b", [(4, 2, "q", 1, "Yes.", 0, N), (5, 2, "q", 2, "Yes.", 0, N)])
    alignment = compare_runs(a, b).alignment
    assert alignment[["claim_id_a", "claim_id_b", "status"]].fillna(-1).values.tolist() == [
        [1, 4, "aligned"], [2, 5, "aligned"], [3, -1, "removed"],
    ]


def test_claims_never_align_across_questions():
    a = run("a", [(1, 1, "q1", 1, "Same text.", 0, N), (2, 2, "q2", 1, "Other.", 0, N)])
    b = run("b", [(3, 3, "q2", 1, "Same text.", 0, N), (4, 4, "q1", 1, "Other.", 0, N)])
    comparison = compare_runs(a, b)
    assert comparison.counts()["aligned"] == 0
    assert comparison.counts()["added"] == 2 and comparison.counts()["removed"] == 2


def test_only_shared_questions_count():
    """q2 is answered by A only (1 uncited claim), q3 by B only. Both are left out:
    A's coverage stays 1/1 (q1), not 1/2."""
    a = run("a", [(1, 1, "q1", 1, "Cited. [1]", 1, S), (2, 2, "q2", 1, "Uncited.", 0, N)], [(1, "1", "x")])
    b = run("b", [(3, 3, "q1", 1, "Cited. [1]", 1, S), (4, 4, "q3", 1, "Uncited.", 0, N)], [(3, "1", "x")])
    comparison = compare_runs(a, b)
    assert comparison.shared_questions == ["q1"]
    assert (comparison.only_a, comparison.only_b) == (["q2"], ["q3"])
    assert comparison.metric("coverage").a_text == "1/1 = 1.00"
    assert comparison.metric("coverage").delta == 0.0
    assert comparison.counts() == {
        "aligned": 1, "exact": 1, "fuzzy": 0, "label_flips": 0, "citation_changes": 0, "added": 0, "removed": 0,
    }
    assert comparison.per_question["question_id"].tolist() == ["q1"]


def test_pending_label_is_not_a_flip():
    a = run("a", [(1, 1, "q", 1, "Cited. [1]", 1, S)], [(1, "1", "x")])
    b = run("b", [(2, 2, "q", 1, "Cited. [1]", 1, None)], [(2, "1", "x")])
    comparison = compare_runs(a, b)
    assert comparison.label_flips.empty
    support = comparison.metric("support")
    assert (support.a, support.b, support.delta) == (1.0, None, None)
    assert support.b_text == "0/0 = — (1 pending)"


def test_precision_and_recall_deltas_with_gold():
    """Seed "Citation Precision and Recall" as run A: cited {d1}, {d1,d4}, {d2}, {}
    against gold {d1}, {d1}, {d2,d3}, {d5} → tp 3, fp 1, fn 2: precision 3/4,
    recall 3/5. Run B cites d3 too on q3 → tp 4, fp 1, fn 1: precision 4/5,
    recall 4/5. Deltas: 4/5 − 3/4 = 1/20 = 0.05; 4/5 − 3/5 = 1/5 = 0.2."""
    def frames(name, base, cites):
        claims, citations = [], []
        for q, ids in enumerate(cites, start=1):
            claim_id = base + q
            claims.append((claim_id, claim_id, f"q{q}", 1, f"Claim of q{q}.", len(ids), S if ids else N))
            citations += [(claim_id, pid, "") for pid in ids]
        answers = pd.DataFrame({"answer_id": [base + q for q in range(1, 5)],
                                "question_id": [f"q{q}" for q in range(1, 5)], "has_gold": True})
        gold = [(1, "d1"), (2, "d1"), (3, "d2"), (3, "d3"), (4, "d5")]
        gold_ids = pd.DataFrame([(base + q, pid) for q, pid in gold], columns=["answer_id", "passage_id"])
        return run(name, claims, citations, answers=answers, gold_ids=gold_ids)

    a = frames("a", 0, [["d1"], ["d1", "d4"], ["d2"], []])
    b = frames("b", 100, [["d1"], ["d1", "d4"], ["d2", "d3"], []])
    comparison = compare_runs(a, b)
    precision, recall = comparison.metric("precision"), comparison.metric("recall")
    assert (precision.a, precision.b, precision.delta) == (0.75, 0.8, 0.05)
    assert (recall.a, recall.b, recall.delta) == (0.6, 0.8, 0.2)
    q3 = comparison.per_question.set_index("question_id").loc["q3"]
    assert (q3["recall_a"], q3["recall_b"], q3["recall_delta"]) == (0.5, 1.0, 0.5)
    assert comparison.has_gold


def test_no_gold_means_no_precision_rows():
    keys = [row.key for row in compare_runs(SEED_A, seed_b()).summary]
    assert keys == ["coverage", "support", "gap", "supported_rate", "mean_coverage", "mean_support"]


def test_per_answer_means_and_their_delta():
    """Two questions. A: q1 coverage 1/1, q2 1/2 → mean 3/4; B: q1 1/1, q2 2/2 →
    mean 1; delta exactly 0.25. Pooled A coverage 2/3."""
    a = run("a", [(1, 1, "q1", 1, "x [1]", 1, S), (2, 2, "q2", 1, "y [1]", 1, S), (3, 2, "q2", 2, "z", 0, N)],
            [(1, "1", "s"), (2, "1", "s")])
    b = run("b", [(4, 3, "q1", 1, "x [1]", 1, S), (5, 4, "q2", 1, "y [1]", 1, S), (6, 4, "q2", 2, "z [2]", 1, S)],
            [(4, "1", "s"), (5, "1", "s"), (6, "2", "t")])
    comparison = compare_runs(a, b)
    mean = comparison.metric("mean_coverage")
    assert (mean.a, mean.b, mean.delta) == (0.75, 1.0, 0.25)
    assert comparison.metric("coverage").a_text == "2/3 = 0.67"


def test_json_output_has_the_documented_keys_and_no_nan():
    data = compare_runs(SEED_A, seed_b()).to_dict()
    text = json.dumps(data, allow_nan=False)
    assert set(data) == {"run_a", "run_b", "threshold", "questions", "has_gold", "summary", "claims",
                         "per_question", "label_flips", "citation_changes", "added", "removed"}
    assert data["questions"] == {"shared": 1, "only_a": [], "only_b": []}
    assert data["summary"]["support"] == {"a": 0.6, "b": 1.0, "delta": 0.4, "a_text": "3/5 = 0.60",
                                          "b_text": "3/3 = 1.00 (1 pending)"}
    assert data["citation_changes"][1]["sources_gained"] == ["runbook.md"]
    assert data["removed"][0]["claim_index_a"] == 5
    assert '"similarity": NaN' not in text


def test_bad_threshold_is_rejected():
    with pytest.raises(ValueError, match="threshold"):
        compare_runs(SEED_A, seed_b(), threshold=0)
    with pytest.raises(ValueError, match="threshold"):
        compare_runs(SEED_A, seed_b(), threshold=1.5)


def test_two_answers_to_one_question_rejected():
    answers = pd.DataFrame({"answer_id": [1, 2], "question_id": ["q", "q"]})
    with pytest.raises(ValueError, match="more than once"):
        compare_runs(run("a", [(1, 1, "q", 1, "x", 0, N)], answers=answers), seed_b())


def test_format_delta_shows_sign_and_never_a_false_zero():
    assert [format_delta(v) for v in (0.15, -0.2, 0.0, None, -3 / 725)] == ["+0.15", "−0.20", "0.00", "—", "−0.004"]


def test_empty_runs_compare_to_nothing():
    comparison = compare_runs(run("a", []), run("b", []))
    assert comparison.shared_questions == []
    assert comparison.metric("coverage").delta is None
    assert comparison.alignment.empty and comparison.label_flips.empty and comparison.citation_changes.empty


texts = st.sampled_from(["Alpha beta.", "Alpha beta gamma.", "Delta.", "Epsilon zeta eta.", "Theta!", "Alpha beta"])
labels = st.sampled_from([S, U, None])


@st.composite
def run_frames(draw, name: str, base: int):
    n_questions = draw(st.integers(1, 3))
    claims, citations = [], []
    claim_id = base
    for q in range(n_questions):
        for index in range(1, draw(st.integers(0, 4)) + 1):
            claim_id += 1
            cited = draw(st.booleans())
            claims.append((claim_id, base + q, f"q{q}", index, draw(texts), int(cited), draw(labels) if cited else N))
            if cited:
                citations.append((claim_id, "1", draw(st.sampled_from(["a.md", "b.md"]))))
    return run(name, claims, citations)


@settings(max_examples=60, deadline=None)
@given(a=run_frames("a", 0), b=run_frames("b", 1000), seed=st.integers(0, 10_000))
def test_row_order_changes_nothing(a, b, seed):
    """Shuffling the claims and citations of both runs gives the same comparison."""
    shuffled_a = RunFrames(
        "a", a.claims.sample(frac=1, random_state=seed), a.citations.sample(frac=1, random_state=seed)
    )
    shuffled_b = RunFrames("b", b.claims.sample(frac=1, random_state=seed + 1), b.citations)
    assert compare_runs(a, b).to_dict() == compare_runs(shuffled_a, shuffled_b).to_dict()


@settings(max_examples=60, deadline=None)
@given(a=run_frames("a", 0))
def test_a_run_against_itself_has_no_differences(a):
    """Every claim aligns exactly with itself; every defined delta is 0."""
    comparison = compare_runs(a, a)
    counts = comparison.counts()
    assert counts["aligned"] == counts["exact"] == len(a.claims)
    assert counts["label_flips"] == counts["citation_changes"] == counts["added"] == counts["removed"] == 0
    assert all(row.delta in (0, None) for row in comparison.summary)


def test_align_claims_output_columns():
    alignment = align_claims(SEED_A.claims, seed_b().claims, threshold=0.85)
    assert list(alignment.columns[:4]) == ["question_id", "status", "match", "similarity"]
    assert alignment["status"].tolist() == ["aligned"] * 4 + ["removed", "added"]
