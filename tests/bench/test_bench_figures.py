"""The figures of a 50k-claim run with their intervals, and its per-answer records
(issue 24: pages ≤ 300 ms right after a write). Pure scoring, no database.

Run: ``pytest -m bench -s -n 0 tests/bench/test_bench_figures.py``. The run is
10,000 answers × 5 claims (80 % cited, one citation each; labels 60 % SUPPORTED /
30 % UNSUPPORTED / 10 % pending), a judgment on every cited claim, gold ids on
every answer and 10 % unanswerable questions; a second run of the same shape
(seed + 1) for the paired differences. Printed, best of five after a warm-up,
with the load average: ``run_figures`` (the per-answer units and values),
``run_intervals`` (every figure's interval and label budget), ``paired_differences``
of the two runs, ``per_answer_records`` of the claim, judgment and citation-id
metrics (the scatter page's and the JSON exports' rows), and the run page's
summary row: ``claim_count_intervals`` from per-answer ``ClaimCounts`` (no query:
the counts are built from the claim metrics).
"""

from __future__ import annotations

import os
import time

import numpy as np
import pandas as pd
import pytest

from labeling.review.tallies import ClaimCounts, claim_count_intervals
from scoring.citation_ids import abstention_metrics, citation_id_metrics
from scoring.claims import claim_metrics
from scoring.figures import paired_differences, run_figures, run_intervals
from scoring.judgments import citation_judgments

pytestmark = pytest.mark.bench

ANSWERS = 10_000
CLAIMS_PER_ANSWER = 5


def synthetic_run(seed: int) -> dict:
    """The metrics of one synthetic run (module docstring)."""
    rng = np.random.default_rng(seed)
    n = ANSWERS * CLAIMS_PER_ANSWER
    answer = np.repeat(np.arange(ANSWERS), CLAIMS_PER_ANSWER)
    index = np.tile(np.arange(CLAIMS_PER_ANSWER), ANSWERS)
    cited = rng.random(n) < 0.8
    draw = rng.random(n)
    label = np.where(draw < 0.6, "SUPPORTED", np.where(draw < 0.9, "UNSUPPORTED", None)).astype(object)
    label[~cited] = "UNCITED"
    answer_ids = np.array([f"a{i:05d}" for i in range(ANSWERS)], dtype=object)
    question_ids = np.array([f"q{i:05d}" for i in range(ANSWERS)], dtype=object)
    claims = pd.DataFrame({"claim_id": np.arange(n), "answer_id": answer_ids[answer],
                           "question_id": question_ids[answer], "claim_index": index,
                           "n_citations": cited.astype("int64"), "label": label})
    judged = rng.choice(np.array(["FULL", "PARTIAL", "NONE", "UNJUDGEABLE"], dtype=object), size=n)
    judgments = pd.DataFrame({"citation_id": np.arange(n)[cited], "claim_id": np.arange(n)[cited],
                              "judgment": judged[cited]})
    passages = np.array([f"P{i}" for i in range(8)], dtype=object)
    answers = pd.DataFrame({"answer_id": answer_ids, "question_id": question_ids, "has_gold": True,
                            "answerable": rng.random(ANSWERS) >= 0.1})
    citations = pd.DataFrame({"answer_id": answer_ids[answer][cited],
                              "passage_id": passages[rng.integers(0, 8, size=int(cited.sum()))],
                              "fabricated": rng.random(int(cited.sum())) < 0.02})
    gold = pd.DataFrame({"answer_id": np.repeat(answer_ids, 2),
                         "passage_id": passages[rng.integers(0, 8, size=2 * ANSWERS)]}).drop_duplicates()
    return {
        "claims": claim_metrics(claims),
        "judgments": citation_judgments(claims, judgments),
        "citation_ids": citation_id_metrics(answers, citations, gold),
        "abstention": abstention_metrics(answers, citations),
    }


def best_ms(work, repeat: int = 5) -> float:
    work()  # warm-up: lazy imports (scipy) and caches
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        work()
        best = min(best, (time.perf_counter() - started) * 1000)
    return best


def test_bench_figures_and_records_10k_answers():
    a, b = synthetic_run(7), synthetic_run(8)
    figures_a, figures_b = run_figures(**a), run_figures(**b)
    entries = run_intervals(figures_a)
    assert entries["coverage"].interval.n_answers == ANSWERS and len(entries) == 15, list(entries)
    per_answer = a["claims"].per_answer
    answer_counts = [ClaimCounts(claims=c, cited=k, supported=s, unsupported=u) for c, k, s, u in zip(
        *(per_answer[column].tolist() for column in ("claims", "cited", "supported", "unsupported")), strict=True)]
    timings = {
        "run_figures": best_ms(lambda: run_figures(**a)),
        "run_intervals": best_ms(lambda: run_intervals(figures_a)),
        "paired_differences": best_ms(lambda: paired_differences(figures_a, figures_b)),
        "claims.per_answer_records": best_ms(a["claims"].per_answer_records),
        "judgments.per_answer_records": best_ms(a["judgments"].per_answer_records),
        "citation_ids.per_answer_records": best_ms(a["citation_ids"].per_answer_records),
        "claim_count_intervals (summary row)": best_ms(lambda: claim_count_intervals(answer_counts)),
    }
    print(f"\n[bench-figures] {ANSWERS:,} answers × {CLAIMS_PER_ANSWER} claims, {len(entries)} figures; "
          f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for name, ms in timings.items():
        print(f"[bench-figures] {name:<36} {ms:8.1f} ms (best of 5)")
