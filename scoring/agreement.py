"""Agreement between reviewers, human or model (SPEC §4.4).

"Do not automate before you can grade the automation" (seed "Measure Citation
Coverage and Support"): an automated labeler is imported as a reviewer of kind
``model`` and graded here against a human (or adjudicated) reviewer.

Every function takes the labels frame of :mod:`scoring.labels` (``claim_id,
reviewer, label``, one current label per reviewer and claim).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import krippendorff
import numpy as np
import pandas as pd

from scoring.labels import LABEL_VALUES, check_labels_frame, sort_by
from scoring.ratio import Ratio


@dataclass(frozen=True)
class Agreement:
    """Two reviewers on the claims both labeled (SPEC §4.4).

    ``n``: claims both labeled. ``agreement``: raw agreement, same label /
    ``n`` as a :class:`~scoring.ratio.Ratio` (value ``None`` when n = 0).
    ``kappa``: Cohen's kappa in [-1, 1], ``None`` when undefined (n = 0, or
    expected agreement 1: both reviewers gave one and the same label to every
    claim). ``confusion``: 3×3 int DataFrame, rows = ``reviewer_a``'s label,
    columns = ``reviewer_b``'s, both in the order SUPPORTED, UNSUPPORTED,
    UNCITED. ``disagreements``: ``claim_id, a, b`` (a's and b's label) for every
    claim where they differ, sorted by ``claim_id``.
    """

    reviewer_a: str
    reviewer_b: str
    n: int
    agreement: Ratio
    kappa: float | None
    confusion: pd.DataFrame = field(repr=False, compare=False)
    disagreements: pd.DataFrame = field(repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: ``reviewer_a, reviewer_b, n, agreement`` (float or None),
        ``kappa``, ``confusion`` ({a's label: {b's label: count}}) and
        ``disagreements`` (list of ``{"claim_id", "a", "b"}``)."""
        return {
            "reviewer_a": self.reviewer_a,
            "reviewer_b": self.reviewer_b,
            "n": self.n,
            "agreement": self.agreement.value,
            "kappa": self.kappa,
            "confusion": {
                row: {col: int(count) for col, count in counts.items()}
                for row, counts in self.confusion.to_dict("index").items()
            },
            "disagreements": [
                {"claim_id": _native(c), "a": a, "b": b} for c, a, b in self.disagreements.itertuples(index=False)
            ],
        }


def pairwise_agreement(labels: pd.DataFrame, reviewer_a: str, reviewer_b: str) -> Agreement:
    """Raw agreement, Cohen's kappa, confusion matrix and disagreements of two
    reviewers on the claims both labeled (SPEC §4.4).

    Kappa = (p_o − p_e) / (1 − p_e) with p_o the raw agreement and p_e =
    Σ_k (a's count of k · b's count of k) / n², evaluated on the integer counts
    of the confusion matrix, so perfect agreement is exactly 1.0. A reviewer
    without labels just gives n = 0.

    Raises ``ValueError`` on an invalid labels frame (see
    :func:`scoring.labels.check_labels_frame`) or when ``reviewer_a`` and
    ``reviewer_b`` are the same reviewer.
    """
    if reviewer_a == reviewer_b:
        raise ValueError(f"agreement needs two different reviewers, got {reviewer_a!r} twice")
    check_labels_frame(labels)

    def labels_of(reviewer: str) -> pd.Series:
        rows = labels[labels["reviewer"] == reviewer]
        return pd.Series(rows["label"].to_numpy(dtype=object), index=rows["claim_id"])

    both = pd.concat({"a": labels_of(reviewer_a), "b": labels_of(reviewer_b)}, axis=1)
    both = both.dropna().rename_axis("claim_id").reset_index()
    confusion = (
        pd.crosstab(both["a"], both["b"])
        .reindex(index=list(LABEL_VALUES), columns=list(LABEL_VALUES), fill_value=0)
        .astype("int64")
    )
    confusion.index.name = reviewer_a
    confusion.columns.name = reviewer_b

    n = len(both)
    agreed = int(np.trace(confusion.to_numpy()))
    chance = int(confusion.sum(axis=1).to_numpy() @ confusion.sum(axis=0).to_numpy())
    # kappa = (n·agreed − Σ a_k·b_k) / (n² − Σ a_k·b_k): p_o and p_e over n², exact
    denominator = n * n - chance
    kappa = None if denominator == 0 else float(Fraction(n * agreed - chance, denominator))
    differ = sort_by(both[both["a"] != both["b"]], ["claim_id"])
    return Agreement(
        reviewer_a=reviewer_a,
        reviewer_b=reviewer_b,
        n=n,
        agreement=Ratio(agreed, n),
        kappa=kappa,
        confusion=confusion,
        disagreements=differ[["claim_id", "a", "b"]],
    )


def krippendorff_alpha(labels: pd.DataFrame, *, reviewers: Iterable[str] | None = None) -> float | None:
    """Krippendorff's alpha, nominal, across all reviewers (SPEC §4.4).

    In: a labels frame; with ``reviewers`` only those reviewers' labels count.
    Claims labeled by a single reviewer carry no pairable value and drop out
    (as in Krippendorff's definition). Computed by the ``krippendorff``
    package from per-claim value counts.

    Out: alpha ≤ 1 (1.0 exactly for perfect agreement), or ``None`` when
    undefined: no claim labeled by ≥ 2 reviewers, or every pairable label is
    the same value (expected disagreement 0).

    Raises ``ValueError`` as :func:`scoring.labels.check_labels_frame`.
    """
    check_labels_frame(labels)
    if reviewers is not None:
        labels = labels[labels["reviewer"].isin(list(reviewers))]
    counts = pd.crosstab(labels["claim_id"], labels["label"])
    counts = counts.reindex(columns=LABEL_VALUES, fill_value=0).to_numpy(dtype="int64")
    pairable = counts[counts.sum(axis=1) >= 2]
    if len(pairable) == 0 or np.count_nonzero(pairable.sum(axis=0)) < 2:
        return None
    return float(krippendorff.alpha(value_counts=pairable, level_of_measurement="nominal"))


def _native(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value
