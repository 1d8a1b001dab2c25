"""Agreement between reviewers: raw, Cohen's kappa, confusion, Krippendorff's
alpha, Gwet's AC1, per-label agreement and bootstrap intervals (SPEC §4.4, scoring.agreement)."""

from __future__ import annotations

import krippendorff
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scoring.agreement import (
    _alpha,
    all_pairs,
    gwet_ac1,
    gwet_ac1_counts,
    krippendorff_alpha,
    pairwise_agreement,
    reliability,
)
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
    p_e = (25·30 + 25·20) / 50² = 1250/2500 = 0.5. kappa = (0.7 − 0.5)/(1 − 0.5) = 0.4.
    scikit-learn's cohen_kappa_score and statsmodels' cohens_kappa give 0.4 too (checked
    once by hand; neither is a dependency: the figure is three integer sums)."""
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
    ac1 = gwet_ac1(labels)
    assert ac1 is None or ac1 <= 1.0
    # the bootstrap draws from the claims' label patterns, not from row positions
    assert reliability(shuffled) == reliability(labels)


# Gwet's AC1, specific agreement per label and the bootstrap intervals.


def test_ac1_on_fifty_claims():
    """ana S25 U25, ben S30 U20 (same table as the kappa example): p_a = 35/50 = 0.7.
    π_S = (25 + 30)/100 = 0.55, π_U = 0.45; q = 2: p_e = (0.55·0.45 + 0.45·0.55)/(2 − 1) = 0.495.
    AC1 = (0.7 − 0.495)/(1 − 0.495) = 0.205/0.505 = 41/101. With all three labels (q = 3)
    p_e halves to 0.2475 and AC1 = 0.4525/0.7525 = 181/301."""
    assert gwet_ac1(fifty_claims(), categories=(S, U)) == pytest.approx(41 / 101)
    assert gwet_ac1(fifty_claims()) == pytest.approx(181 / 301)


def test_ac1_stays_high_where_kappa_collapses_on_a_run_of_supported_claims():
    """100 claims, ana S on all, ben S on 98 and U on 2: raw agreement 0.98.
    Kappa: agreed 98, chance = 100·98 + 0·2 = 9800, kappa = (100·98 − 9800)/(100² − 9800) = 0.
    Alpha: n_S = 198, n_U = 2, N = 200, o_SU + o_US = 4: 1 − 199·4/(2·198·2) = 1 − 796/792 = −1/198.
    AC1: π_S = 198/200 = 0.99, π_U = 0.01, p_e = 2·0.99·0.01 = 0.0198,
    AC1 = (0.98 − 0.0198)/(1 − 0.0198) = 0.9602/0.9802 = 4801/4901."""
    labels = two_reviewers([(S, S)] * 98 + [(S, U)] * 2)

    assert pairwise_agreement(labels, "ana", "ben").kappa == 0.0
    assert krippendorff_alpha(labels) == pytest.approx(-1 / 198)
    assert gwet_ac1(labels, categories=(S, U)) == pytest.approx(4801 / 4901)


def test_ac1_matches_gwets_published_four_rater_example():
    """Gwet, Handbook of Inter-Rater Reliability (4th ed., 2014), 4 raters × 12 units, 5
    categories, missing ratings; his irrCAC package prints AC1 = 0.77544 (p_a = 0.81818,
    p_e = 0.19032). The same data is Krippendorff's own nominal example: alpha = 0.743."""
    ratings = [  # rater 1..4 per unit, None: not rated
        (1, 1, None, 1), (2, 2, 3, 2), (3, 3, 3, 3), (3, 3, 3, 3), (2, 2, 2, 2), (1, 2, 3, 4),
        (4, 4, 4, 4), (1, 1, 2, 1), (2, 2, 2, 2), (None, 5, 5, 5), (None, None, 1, 1), (None, None, 3, None),
    ]
    counts = np.array([[row.count(k) for k in range(1, 6)] for row in ratings])

    assert gwet_ac1_counts(counts) == pytest.approx(0.77544, abs=5e-6)
    assert round(float(krippendorff.alpha(value_counts=counts, level_of_measurement="nominal")), 3) == 0.743


def test_ac1_is_one_when_everyone_gives_the_same_label_and_kappa_and_alpha_are_undefined():
    labels = two_reviewers([(S, S)] * 4)

    assert gwet_ac1(labels, categories=(S, U)) == 1.0
    assert pairwise_agreement(labels, "ana", "ben").kappa is None
    assert krippendorff_alpha(labels) is None


def test_ac1_undefined_without_a_claim_labeled_twice():
    assert gwet_ac1(two_reviewers([(S, None), (None, U)])) is None
    assert gwet_ac1(two_reviewers([])) is None


def test_specific_agreement_per_label_for_a_pair():
    """fifty claims: SUPPORTED 2·20/(25 + 30) = 40/55; UNSUPPORTED 2·15/(25 + 20) = 30/45;
    UNCITED 0/0 (nobody gave it) is undefined."""
    per_label = pairwise_agreement(fifty_claims(), "ana", "ben").per_label

    assert (per_label[S].numerator, per_label[S].denominator) == (40, 55)
    assert (per_label[U].numerator, per_label[U].denominator) == (30, 45)
    assert per_label[C].value is None
    assert pairwise_agreement(fifty_claims(), "ana", "ben").to_dict()["per_label"][C] is None


def three_reviewers() -> pd.DataFrame:
    """Claim 1: S,S,S. Claim 2: S,U (cleo absent). Claim 3: U,U,U. Claim 4: cleo only, U."""
    return pd.DataFrame(
        [
            (1, "ana", S), (1, "ben", S), (1, "cleo", S),
            (2, "ana", S), (2, "ben", U),
            (3, "ana", U), (3, "ben", U), (3, "cleo", U),
            (4, "cleo", U),
        ],
        columns=["claim_id", "reviewer", "label"],
    )  # fmt: skip


def test_reliability_across_three_reviewers_with_missing_labels():
    """alpha 9/16 as in test_alpha_three_reviewers_with_missing_labels (claim 4 drops out), n = 3.
    AC1: p_a = (1 + 0 + 1)/3 = 2/3 over the 3 claims with ≥ 2 labels; π over all 4 claims:
    π_S = (1 + 1/2 + 0 + 0)/4 = 3/8, π_U = 5/8; q = 2: p_e = 2·(3/8)(5/8) = 15/32;
    AC1 = (2/3 − 15/32)/(1 − 15/32) = (19/96)/(17/32) = 19/51.
    Per label: pairs of labels on one claim, ordered: claim 1 has 6 S-S pairs, claim 2 one S-U
    and one U-S, claim 3 6 U-U. SUPPORTED: same 6, involving S = 6 + 1 = 7 → 6/7; UNSUPPORTED 6/7."""
    result = reliability(three_reviewers(), categories=(S, U))

    assert result.reviewers == ["ana", "ben", "cleo"]
    assert result.claims == 4
    assert result.alpha.value == pytest.approx(9 / 16) and result.alpha.n == 3
    assert result.ac1.value == pytest.approx(19 / 51) and result.ac1.n == 3
    assert (result.per_label[S].numerator, result.per_label[S].denominator) == (6, 7)
    assert (result.per_label[U].numerator, result.per_label[U].denominator) == (6, 7)


def test_bootstrap_intervals_repeat_exactly_and_hold_the_figure():
    labels = fifty_claims()

    first, again = reliability(labels, categories=(S, U)), reliability(labels, categories=(S, U))
    pair = pairwise_agreement(labels, "ana", "ben", categories=(S, U))

    assert first == again
    assert pairwise_agreement(labels, "ana", "ben", categories=(S, U)).kappa_ci95 == pair.kappa_ci95
    for value, (low, high) in ((first.alpha.value, first.alpha.ci95), (first.ac1.value, first.ac1.ci95),
                               (pair.kappa, pair.kappa_ci95)):
        assert -1 <= low < value < high <= 1
    # 50 claims leave a wide interval: kappa 0.4 could well be anywhere from ~0.15 to ~0.65.
    assert pair.kappa_ci95[1] - pair.kappa_ci95[0] > 0.3


def test_intervals_narrow_as_claims_grow():
    """The same 20/5/10/15 table ten times over (500 claims): same kappa 0.4, interval about √10 narrower."""
    small = pairwise_agreement(fifty_claims(), "ana", "ben")
    large = pairwise_agreement(
        two_reviewers(([(S, S)] * 20 + [(S, U)] * 5 + [(U, S)] * 10 + [(U, U)] * 15) * 10), "ana", "ben")

    assert large.kappa == small.kappa == 0.4
    width = lambda ci: ci[1] - ci[0]  # noqa: E731
    assert 2.5 < width(small.kappa_ci95) / width(large.kappa_ci95) < 4


def test_intervals_null_where_the_figure_is_undefined():
    same = reliability(two_reviewers([(S, S)] * 3), categories=(S, U))
    apart = reliability(two_reviewers([(S, None), (None, U)]), categories=(S, U))

    assert same.alpha.value is None and same.alpha.ci95 is None
    assert same.ac1.value == 1.0 and same.ac1.ci95 == (1.0, 1.0)
    assert apart.alpha.to_dict() == {"value": None, "n": 0, "ci95": None}
    assert apart.ac1.to_dict() == {"value": None, "n": 0, "ci95": None}
    assert pairwise_agreement(two_reviewers([(S, S)] * 3), "ana", "ben").to_dict()["kappa_ci95"] is None


def test_all_pairs_names_every_pair_once_in_name_order():
    pairs = all_pairs(three_reviewers(), categories=(S, U))

    assert [(p.reviewer_a, p.reviewer_b, p.n) for p in pairs] == [("ana", "ben", 3), ("ana", "cleo", 2),
                                                                  ("ben", "cleo", 2)]


def test_label_outside_the_categories_rejected():
    with pytest.raises(ValueError, match="UNCITED outside the categories"):
        reliability(two_reviewers([(C, C)]), categories=(S, U))


@settings(deadline=None, max_examples=60)
@given(st.lists(st.lists(st.integers(0, 3), min_size=3, max_size=3), min_size=1, max_size=30))
def test_vectorized_alpha_of_the_resamples_equals_the_krippendorff_package(rows):
    """The bootstrap recomputes alpha on pattern counts (scoring.agreement._alpha); on the
    observed claims it must give the krippendorff package's figure."""
    counts = np.array(rows)
    pairable = counts[counts.sum(axis=1) >= 2]
    if len(pairable) == 0 or np.count_nonzero(pairable.sum(axis=0)) < 2:
        return
    expected = krippendorff.alpha(value_counts=pairable, level_of_measurement="nominal")
    assert _alpha(counts, np.ones((1, len(counts))))[0] == pytest.approx(expected)
