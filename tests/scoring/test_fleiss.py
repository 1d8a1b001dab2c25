"""Fleiss' kappa across reviewers (SPEC §4.4, ``scoring.agreement``): by hand, with
missing labels, and against ``statsmodels.stats.inter_rater.fleiss_kappa``."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.inter_rater import aggregate_raters
from statsmodels.stats.inter_rater import fleiss_kappa as statsmodels_fleiss

from scoring.agreement import fleiss_kappa, fleiss_kappa_counts, reliability

S, U = "SUPPORTED", "UNSUPPORTED"


def labels(rows: list[tuple[int, str, str]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["claim_id", "reviewer", "label"])


TWO_REVIEWERS = [(1, "a", S), (1, "b", S), (2, "a", S), (2, "b", U), (3, "a", U), (3, "b", U), (4, "a", S),
                 (4, "b", S)]


def test_two_reviewers_by_hand():
    """Claims (S,S), (S,U), (U,U), (S,S): p_a = (1 + 0 + 1 + 1)/4 = 0.75; π_S = (1 + 0.5 + 0 + 1)/4
    = 0.625, π_U = 0.375; p_e = 0.625² + 0.375² = 0.53125; kappa = 0.21875/0.46875 = 7/15."""
    assert fleiss_kappa(labels(TWO_REVIEWERS)) == pytest.approx(7 / 15, abs=1e-12)


def test_a_claim_with_one_label_moves_only_the_prevalence():
    """Claim 5 labeled S by a alone: p_a stays 0.75 (claims with two labels); π over the 5
    labeled claims: π_S = (1 + 0.5 + 0 + 1 + 1)/5 = 0.7, π_U = 0.3; p_e = 0.58;
    kappa = 0.17/0.42 = 17/42 (Gwet 2014, irrCAC's fleiss.kappa.raw)."""
    assert fleiss_kappa(labels([*TWO_REVIEWERS, (5, "a", S)])) == pytest.approx(17 / 42, abs=1e-12)


def test_undefined_without_two_labels_or_with_one_label_throughout():
    assert fleiss_kappa(labels([(1, "a", S), (2, "b", U)])) is None
    assert fleiss_kappa(labels([(1, "a", S), (1, "b", S), (2, "a", S), (2, "b", S)])) is None


@pytest.mark.parametrize(("raters", "categories"), [(2, 2), (3, 2), (4, 3)])
def test_equals_statsmodels_when_every_claim_has_the_same_number_of_labels(raters, categories):
    rng = np.random.default_rng(raters * 10 + categories)
    truth = rng.integers(0, categories, size=60)
    ratings = np.where(rng.random((60, raters)) < 0.8, truth[:, None], rng.integers(0, categories, (60, raters)))
    table, _ = aggregate_raters(ratings, n_cat=categories)
    names = [S, U, "UNCITED"][:categories]
    frame = labels([(claim, f"r{j}", names[ratings[claim, j]]) for claim in range(60) for j in range(raters)])
    assert fleiss_kappa(frame, categories=names) == pytest.approx(statsmodels_fleiss(table), abs=1e-12)
    assert fleiss_kappa_counts(table) == pytest.approx(statsmodels_fleiss(table), abs=1e-12)


def test_reliability_reports_fleiss_kappa_with_its_bootstrap_interval():
    rng = np.random.default_rng(4)
    truth = rng.integers(0, 2, size=80)
    rows = []
    for claim in range(80):
        for reviewer in ("a", "b", "c"):
            agree = rng.random() < 0.85
            rows.append((claim, reviewer, [S, U][truth[claim] if agree else 1 - truth[claim]]))
    frame = labels(rows)
    result = reliability(frame, categories=[S, U])
    kappa = result.fleiss_kappa
    assert kappa.value == pytest.approx(fleiss_kappa(frame, categories=[S, U]), abs=1e-12)
    assert kappa.n == 80 and kappa.ci95[0] < kappa.value < kappa.ci95[1]
    assert reliability(frame, categories=[S, U]).fleiss_kappa == kappa  # the fixed seed repeats it
    assert result.to_dict()["fleiss_kappa"] == {"value": kappa.value, "n": 80, "ci95": list(kappa.ci95)}
