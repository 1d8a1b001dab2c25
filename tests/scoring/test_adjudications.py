"""``scoring.labels.apply_adjudications``: a lead's verdict is the claim's label."""

from __future__ import annotations

import pandas as pd

from scoring.labels import apply_adjudications, resolve_labels


def test_adjudication_settles_a_dispute_and_leaves_agreed_claims_alone():
    """Claim 1: ann SUPPORTED, bob UNSUPPORTED → disputed (None); claim 2: both SUPPORTED;
    claim 3: nobody labeled. The lead says UNSUPPORTED on 1 and SUPPORTED on 3:
    1 → UNSUPPORTED (settled), 2 → SUPPORTED (agreed, not adjudicated), 3 → SUPPORTED (reviewers 0)."""
    labels = pd.DataFrame({"claim_id": [1, 1, 2, 2], "reviewer": ["ann", "bob", "ann", "bob"],
                           "label": ["SUPPORTED", "UNSUPPORTED", "SUPPORTED", "SUPPORTED"]})
    adjudications = pd.DataFrame({"claim_id": [1, 3], "label": ["UNSUPPORTED", "SUPPORTED"]})

    out = apply_adjudications(resolve_labels(labels), adjudications)

    assert out.to_dict("list") == {
        "claim_id": [1, 2, 3], "label": ["UNSUPPORTED", "SUPPORTED", "SUPPORTED"], "reviewers": [2, 2, 0],
        "disagreement": [False, False, False], "adjudicated": [True, False, True],
    }


def test_no_adjudication_changes_nothing_but_adds_the_flag():
    labels = pd.DataFrame({"claim_id": [5, 5], "reviewer": ["ann", "bob"], "label": ["SUPPORTED", "UNSUPPORTED"]})
    out = apply_adjudications(resolve_labels(labels), pd.DataFrame(columns=["claim_id", "label"]))
    assert out.to_dict("list") == {"claim_id": [5], "label": [None], "reviewers": [2], "disagreement": [True],
                                   "adjudicated": [False]}
