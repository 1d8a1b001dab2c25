"""Resolving reviewers' current labels to one label per claim (scoring.labels)."""

from __future__ import annotations

import pandas as pd
import pytest

from scoring.labels import SUPPORTED, UNCITED, UNSUPPORTED, counted_labels, disagreements, resolve_labels


def labels_frame(rows: list[tuple[object, str, str | None]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["claim_id", "reviewer", "label"])


def test_resolved_label_is_the_one_all_reviewers_agree_on():
    """Claim 1: ana and ben both SUPPORTED -> SUPPORTED, 2 reviewers, no disagreement.
    Claim 2: only ana, UNCITED -> UNCITED, 1 reviewer."""
    labels = labels_frame([(1, "ana", SUPPORTED), (1, "ben", SUPPORTED), (2, "ana", UNCITED)])

    resolved = resolve_labels(labels)

    assert resolved.to_dict("records") == [
        {"claim_id": 1, "label": SUPPORTED, "reviewers": 2, "disagreement": False},
        {"claim_id": 2, "label": UNCITED, "reviewers": 1, "disagreement": False},
    ]


def test_disagreeing_reviewers_leave_claim_pending():
    """ana SUPPORTED vs ben UNSUPPORTED on claim 7 -> label None (pending), disagreement."""
    labels = labels_frame([(7, "ana", SUPPORTED), (7, "ben", UNSUPPORTED)])

    resolved = resolve_labels(labels)

    assert resolved.to_dict("records") == [{"claim_id": 7, "label": None, "reviewers": 2, "disagreement": True}]


def test_reviewer_filter_counts_only_that_reviewers_labels():
    """With reviewer="ben", claim 7 is ben's UNSUPPORTED (no disagreement) and
    claim 8, labeled by ana only, is absent."""
    labels = labels_frame([(7, "ana", SUPPORTED), (7, "ben", UNSUPPORTED), (8, "ana", SUPPORTED)])

    resolved = resolve_labels(labels, reviewer="ben")

    assert resolved.to_dict("records") == [{"claim_id": 7, "label": UNSUPPORTED, "reviewers": 1, "disagreement": False}]


def test_reviewer_without_labels_gets_empty_frame_with_the_columns():
    labels = labels_frame([(7, "ana", SUPPORTED)])

    resolved = resolve_labels(labels, reviewer="nobody")

    assert resolved.empty
    assert list(resolved.columns) == ["claim_id", "label", "reviewers", "disagreement"]


def test_resolved_labels_are_sorted_by_claim_id_whatever_the_row_order():
    rows = [
        (3, "ana", SUPPORTED),
        (1, "ben", UNCITED),
        (2, "ana", UNSUPPORTED),
        (1, "ana", UNCITED),
    ]

    forward = resolve_labels(labels_frame(rows))
    backward = resolve_labels(labels_frame(rows[::-1]))

    assert forward["claim_id"].tolist() == [1, 2, 3]
    pd.testing.assert_frame_equal(forward, backward)


def test_unknown_label_value_rejected_naming_it():
    labels = labels_frame([(1, "ana", "supported"), (2, "ana", "MAYBE"), (3, "ana", SUPPORTED)])

    with pytest.raises(ValueError, match=r"'MAYBE', 'supported'"):
        resolve_labels(labels)


def test_label_row_without_value_rejected():
    labels = labels_frame([(1, "ana", None)])

    with pytest.raises(ValueError, match="no label value"):
        resolve_labels(labels)


def test_two_current_labels_of_one_reviewer_on_a_claim_rejected():
    labels = labels_frame([(1, "ana", SUPPORTED), (1, "ana", UNSUPPORTED)])

    with pytest.raises(ValueError, match=r"more than one current label.*\(1, 'ana'\)"):
        resolve_labels(labels)


def test_missing_column_rejected_naming_it():
    labels = pd.DataFrame({"claim_id": [1], "label": [SUPPORTED]})

    with pytest.raises(ValueError, match="lacks column.*reviewer"):
        resolve_labels(labels)


def test_disagreements_lists_each_reviewers_label():
    """Claim 1: agreed (left out). Claim 2: ana S, ben U, cleo absent -> None.
    Claim 3: ben U vs cleo S."""
    labels = labels_frame(
        [
            (1, "ana", SUPPORTED),
            (1, "ben", SUPPORTED),
            (2, "ana", SUPPORTED),
            (2, "ben", UNSUPPORTED),
            (3, "cleo", SUPPORTED),
            (3, "ben", UNSUPPORTED),
        ]
    )

    listed = disagreements(labels)

    assert listed.to_dict("records") == [
        {"claim_id": 2, "ana": SUPPORTED, "ben": UNSUPPORTED, "cleo": None},
        {"claim_id": 3, "ana": None, "ben": UNSUPPORTED, "cleo": SUPPORTED},
    ]


def test_disagreements_empty_when_everyone_agrees():
    labels = labels_frame([(1, "ana", SUPPORTED), (1, "ben", SUPPORTED)])

    assert disagreements(labels).empty


def test_counted_labels_drop_only_an_automated_labelers_rows():
    labels = labels_frame([(1, "ana", SUPPORTED), (1, "judge", UNSUPPORTED), (2, "expert", SUPPORTED)])
    labels["kind"] = ["human", "model", "external"]

    counted = counted_labels(labels)

    assert counted[["claim_id", "reviewer"]].values.tolist() == [[1, "ana"], [2, "expert"]]
    assert resolve_labels(counted[["claim_id", "reviewer", "label"]])["label"].tolist() == [SUPPORTED, SUPPORTED]


def test_counted_labels_keep_the_promoted_judge_and_drop_the_excluded():
    """One claim: ann (human) SUPPORTED, judge-a (model, promoted) UNSUPPORTED, judge-b
    (model) UNSUPPORTED, cy (human, left out) UNSUPPORTED, ex (external) SUPPORTED →
    ann, judge-a and ex count: the claim is disputed. Without the promotion: ann and ex,
    SUPPORTED. Left out is left out whatever the kind (judge-a excluded: ann and ex)."""
    labels = labels_frame([(1, "ann", SUPPORTED), (1, "judge-a", UNSUPPORTED), (1, "judge-b", UNSUPPORTED),
                           (1, "cy", UNSUPPORTED), (1, "ex", SUPPORTED)])
    labels["kind"] = ["human", "model", "model", "human", "external"]

    promoted = counted_labels(labels, promoted="judge-a", excluded=("cy",))
    humans = counted_labels(labels, excluded=["cy"])
    judge_out = counted_labels(labels, promoted="judge-a", excluded={"cy", "judge-a"})

    assert promoted["reviewer"].tolist() == ["ann", "judge-a", "ex"]
    assert resolve_labels(promoted[["claim_id", "reviewer", "label"]])["disagreement"].tolist() == [True]
    assert humans["reviewer"].tolist() == ["ann", "ex"]
    assert resolve_labels(humans[["claim_id", "reviewer", "label"]])["label"].tolist() == [SUPPORTED]
    assert judge_out["reviewer"].tolist() == ["ann", "ex"]
