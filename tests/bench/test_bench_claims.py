"""claim_metrics on 1M claims (~100k answers): seconds, ratio to a bare numpy
floor measured in the same run, and peak memory. Run with
``pytest -m bench -s tests/bench/test_bench_claims.py``."""

from __future__ import annotations

import time
import tracemalloc

import numpy as np
import pandas as pd
import pytest

from scoring.claims import claim_metrics
from scoring.labels import SUPPORTED, UNCITED, UNSUPPORTED

N_CLAIMS = 1_000_000
BUDGET_SECONDS = 2.0


def million_claims(seed: int = 0) -> pd.DataFrame:
    """1M claims over ~100k answers (1–19 claims each, ordered by answer like an
    export); 70 % cited, cited claims 60 % SUPPORTED / 30 % UNSUPPORTED / 10 % pending."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 20, size=N_CLAIMS // 10 * 2)
    sizes = sizes[: np.searchsorted(np.cumsum(sizes), N_CLAIMS) + 1]
    answer_id = np.repeat(np.arange(len(sizes)), sizes)[:N_CLAIMS]
    starts = np.flatnonzero(np.r_[True, answer_id[1:] != answer_id[:-1]])
    claim_index = np.arange(N_CLAIMS) - np.repeat(starts, np.diff(np.r_[starts, N_CLAIMS]))
    cited = rng.random(N_CLAIMS) < 0.7
    n_citations = np.where(cited, rng.integers(1, 4, size=N_CLAIMS), 0)
    draw = rng.random(N_CLAIMS)
    label = np.where(draw < 0.6, SUPPORTED, np.where(draw < 0.9, UNSUPPORTED, None)).astype(object)
    label[~cited] = UNCITED
    question_names = np.array([f"q{i:06d}" for i in range(answer_id.max() + 1)], dtype=object)
    return pd.DataFrame(
        {
            "answer_id": answer_id,
            "question_id": question_names[answer_id],
            "claim_index": claim_index,
            "n_citations": n_citations,
            "label": label,
        }
    )


def numpy_floor(answer_id: np.ndarray, n_citations: np.ndarray, label: np.ndarray) -> list:
    """The same per-answer counts with nothing but numpy (answer ids already 0..n-1)."""
    cited = n_citations > 0
    supported = cited & (label == SUPPORTED)
    unsupported = cited & (label == UNSUPPORTED)
    pending = cited & ~(supported | unsupported)  # cited claims are S, U or unlabeled
    return [
        np.bincount(answer_id, minlength=answer_id[-1] + 1),
        np.bincount(answer_id, weights=cited),
        np.bincount(answer_id, weights=supported | unsupported),
        np.bincount(answer_id, weights=supported),
        np.bincount(answer_id, weights=unsupported),
        np.bincount(answer_id, weights=pending),
    ]


def best_of(runs: int, work) -> tuple[float, object]:
    best, result = float("inf"), None
    for _ in range(runs):
        start = time.perf_counter()
        result = work()
        best = min(best, time.perf_counter() - start)
    return best, result


@pytest.mark.bench
def test_claim_metrics_scores_a_million_claims_within_budget():
    claims = million_claims()
    answer_id = claims["answer_id"].to_numpy()
    n_citations = claims["n_citations"].to_numpy()
    label = claims["label"].to_numpy(dtype=object)

    floor_seconds, floor = best_of(3, lambda: numpy_floor(answer_id, n_citations, label))
    seconds, metrics = best_of(3, lambda: claim_metrics(claims))
    tracemalloc.start()
    claim_metrics(claims)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()

    print(
        f"\nclaim_metrics: {len(claims):,} claims, {metrics.answers:,} answers: "
        f"{seconds:.3f} s (best of 3); numpy bincount floor {floor_seconds:.3f} s; "
        f"ratio {seconds / floor_seconds:.1f}x; peak traced memory {peak / 2**20:.0f} MiB"
    )
    assert metrics.claims == N_CLAIMS
    assert metrics.cited == int(floor[1].sum())
    assert metrics.supported == int(floor[3].sum())
    assert metrics.pending == int(floor[5].sum())
    assert seconds <= BUDGET_SECONDS
