"""The human labels of fixtures/expertqa_dev.jsonl reproduce the per-run
table of fixtures/README.md (SPEC §4.1)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from scoring.claims import claim_metrics
from tests.conftest import EXPERTQA_PATH


def expertqa_claims() -> pd.DataFrame:
    """One row per claim: an answer is a line of the file (answer_id = line
    number), n_citations = len(citations), label as given (null = pending)."""
    rows = []
    with EXPERTQA_PATH.open(encoding="utf-8") as lines:
        for answer_id, line in enumerate(lines):
            answer = json.loads(line)
            for claim_index, claim in enumerate(answer["claims"]):
                rows.append(
                    {
                        "run": answer["run"],
                        "answer_id": answer_id,
                        "question_id": answer["question_id"],
                        "claim_index": claim_index,
                        "n_citations": len(claim["citations"]),
                        "label": claim["label"],
                    }
                )
    return pd.DataFrame(rows)


# run, answers, claims, cited, labeled cited, supported,
# coverage pooled, support pooled, coverage per-answer mean, support per-answer mean
README_TABLE = [
    ("post_hoc_gs_gpt4", 30, 181, 177, 175, 133, 0.9779, 0.7600, 0.9830, 0.7519),
    ("post_hoc_sphere_gpt4", 30, 180, 180, 171, 92, 1.0000, 0.5380, 1.0000, 0.4968),
    ("rr_gs_gpt4", 29, 162, 123, 123, 110, 0.7593, 0.8943, 0.7787, 0.8092),
    ("rr_sphere_gpt4", 29, 212, 159, 150, 113, 0.7500, 0.7533, 0.7737, 0.7172),
]


@pytest.fixture(scope="module")
def claims(expertqa_path) -> pd.DataFrame:
    return expertqa_claims()


@pytest.mark.parametrize("row", README_TABLE, ids=[row[0] for row in README_TABLE])
def test_human_labels_reproduce_the_readme_table(claims, row):
    run, answers, n_claims, cited, labeled_cited, supported, *ratios = row

    metrics = claim_metrics(claims[claims["run"] == run])

    assert (
        metrics.answers,
        metrics.claims,
        metrics.cited,
        metrics.labeled_cited,
        metrics.supported,
    ) == (answers, n_claims, cited, labeled_cited, supported)
    figures = (
        metrics.coverage.value,
        metrics.support.value,
        metrics.mean_coverage,
        metrics.mean_support,
    )
    assert [round(value, 4) for value in figures] == ratios


def test_post_hoc_sphere_coverage_is_exactly_one_and_shows_its_pending_claims(claims):
    """post_hoc_sphere_gpt4: all 180 claims cited -> coverage 180/180 = 1.0 exactly;
    180 cited − 171 labeled = 9 cited claims the experts could not judge (pending)."""
    metrics = claim_metrics(claims[claims["run"] == "post_hoc_sphere_gpt4"])

    assert metrics.coverage.value == 1.0
    assert metrics.pending == 9
    assert str(metrics.support) == "92/171 = 0.54"
