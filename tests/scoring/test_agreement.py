"""Agreement between reviewers: raw, Cohen's kappa, confusion, Krippendorff's
alpha (SPEC §4.4, scoring.agreement)."""

from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scoring.agreement import krippendorff_alpha, pairwise_agreement
from scoring.labels import LABEL_VALUES, SUPPORTED, UNCITED, UNSUPPORTED

S, U, C = SUPPORTED, UNSUPPORTED, UNCITED


def two_reviewers(pairs: list[tuple[str | None, str | None]]) -> pd.DataFrame:
    """Claim i gets ana's pairs[i][0] and ben's pairs[i][1] (None: not labeled)."""
    rows = []
    for claim_id, (ana, ben) in enumerate(pairs):
        if ana is not None:
            rows.append((claim_id, "ana", ana))
        if ben is not None:
            rows.append((claim_id, "ben", ben))
    return pd.DataFrame(rows, columns=["claim_id", "reviewer", "label"])


def fifty_claims() -> pd.DataFrame:
    """ana\\ben: S,S 20 | S,U 5 | U,S 10 | U,U 15 (the textbook 2×2 kappa example)."""
    return two_reviewers([(S, S)] * 20 + [(S, U)] * 5 + [(U, S)] * 10 + [(U, U)] * 15)


def test_kappa_on_fifty_claims():
    """p_o = 35/50 = 0.7. ana S 25 / U 25, ben S 30 / U 20:
    p_e = (25·30 + 25·20) / 50² = 1250/2500 = 0.5. kappa = (0.7 − 0.5)/(1 − 0.5) = 0.4."""
    result = pairwise_agreement(fifty_claims(), "ana", "ben")

    assert result.n == 50
    assert str(result.agreement) == "35/50 = 0.70"
    assert result.kappa == 0.4


def test_confusion_matrix_rows_are_first_reviewer_over_all_three_labels():
    result = pairwise_agreement(fifty_claims(), "ana", "ben")

    assert result.confusion.index.tolist() == list(LABEL_VALUES)
    assert result.confusion.columns.tolist() == list(LABEL_VALUES)
    assert result.confusion.to_numpy().tolist() == [[20, 5, 0], [10, 15, 0], [0, 0, 0]]
    assert result.to_dict()["confusion"][S] == {S: 20, U: 5, C: 0}


def test_only_claims_both_labeled_count_and_disagreements_are_listed():
    """Claims 0 (S,S), 1 (S,U), 2 (C,C) both labeled; 3 only ana, 4 only ben.
    n = 3, agreement 2/3. ana S2 U0 C1 vs ben S1 U1 C1: p_e·n² = 2·1 + 0·1 + 1·1 = 3;
    kappa = (3·2 − 3)/(9 − 3) = 0.5. Disagreement: claim 1, S vs U."""
    labels = two_reviewers([(S, S), (S, U), (C, C), (S, None), (None, U)])

    result = pairwise_agreement(labels, "ana", "ben")

    assert result.n == 3
    assert str(result.agreement) == "2/3 = 0.67"
    assert result.kappa == 0.5
    assert result.to_dict()["disagreements"] == [{"claim_id": 1, "a": S, "b": U}]


def test_perfect_agreement_is_exactly_one():
    result = pairwise_agreement(two_reviewers([(S, S), (U, U), (C, C), (S, S)]), "ana", "ben")

    assert result.agreement.value == 1.0
    assert result.kappa == 1.0
    assert result.disagreements.empty


def test_kappa_undefined_when_both_give_one_and_the_same_label():
    """All S on both sides: p_e = 1, kappa = 0/0 -> None, though agreement is 2/2."""
    result = pairwise_agreement(two_reviewers([(S, S), (S, S)]), "ana", "ben")

    assert result.agreement.value == 1.0
    assert result.kappa is None


def test_no_shared_claims_gives_nulls():
    result = pairwise_agreement(two_reviewers([(S, None), (None, U)]), "ana", "ben")

    assert result.n == 0
    assert result.to_dict()["agreement"] is None
    assert result.kappa is None
    assert result.confusion.to_numpy().sum() == 0


def test_reviewer_compared_with_themself_rejected():
    with pytest.raises(ValueError, match="two different reviewers"):
        pairwise_agreement(fifty_claims(), "ana", "ana")


def test_alpha_two_reviewers_fifty_claims():
    """Coincidences: o_SS = 40, o_UU = 30, o_SU = o_US = 15; n_S = 55, n_U = 45, n = 100.
    alpha = 1 − (n − 1)·(o_SU + o_US) / (2·n_S·n_U) = 1 − 99·30/4950 = 0.4."""
    assert krippendorff_alpha(fifty_claims()) == pytest.approx(0.4)


def test_alpha_three_reviewers_with_missing_labels():
    """Claim 1: S,S,S (o_SS += 3·2/2 = 3). Claim 2: S,U, cleo absent (o_SU = o_US = 1).
    Claim 3: U,U,U (o_UU += 3). Claim 4: cleo only (unpairable, dropped).
    n_S = 4, n_U = 4, n = 8: D_o = 2/8, D_e = 2·4·4/(8·7) = 4/7,
    alpha = 1 − (1/4)/(4/7) = 9/16 = 0.5625."""
    labels = pd.DataFrame(
        [
            (1, "ana", S), (1, "ben", S), (1, "cleo", S),
            (2, "ana", S), (2, "ben", U),
            (3, "ana", U), (3, "ben", U), (3, "cleo", U),
            (4, "cleo", C),
        ],
        columns=["claim_id", "reviewer", "label"],
    )  # fmt: skip

    assert krippendorff_alpha(labels) == pytest.approx(9 / 16)
    # ana and ben alone: claims 1 (S,S), 2 (S,U), 3 (U,U): n_S = 3, n_U = 3, n = 6,
    # alpha = 1 − 5·2/(2·3·3) = 4/9
    assert krippendorff_alpha(labels, reviewers=["ana", "ben"]) == pytest.approx(4 / 9)


def test_alpha_perfect_agreement_is_one():
    assert krippendorff_alpha(two_reviewers([(S, S), (U, U), (C, C)])) == 1.0


@pytest.mark.parametrize(
    "pairs",
    [
        [(S, S), (S, S)],  # one value only: expected disagreement 0
        [(S, None), (None, U)],  # no claim labeled by two reviewers
        [],
    ],
)
def test_alpha_undefined_is_none(pairs):
    assert krippendorff_alpha(two_reviewers(pairs)) is None


LABEL_PAIRS = st.lists(st.tuples(st.sampled_from(LABEL_VALUES), st.sampled_from(LABEL_VALUES)))


@settings(deadline=None, max_examples=60)
@given(LABEL_PAIRS, st.randoms(use_true_random=False))
def test_agreement_ignores_row_order_and_stays_in_range(pairs, random):
    labels = two_reviewers(pairs)
    shuffled = labels.sample(frac=1, random_state=random.randrange(2**32))

    result = pairwise_agreement(labels, "ana", "ben")

    assert pairwise_agreement(shuffled, "ana", "ben").to_dict() == result.to_dict()
    assert result.kappa is None or -1.0 <= result.kappa <= 1.0
    alpha = krippendorff_alpha(labels)
    assert alpha is None or alpha <= 1.0
    assert krippendorff_alpha(shuffled) == pytest.approx(alpha)
