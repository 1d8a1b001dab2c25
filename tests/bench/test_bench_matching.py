"""Speed of the default `ngram` match method (SPEC §4.3) and of gold scoring.

Deselected by default (marker ``bench``). Run:

    cd /work/main && /work/venv/bin/pytest -m bench -s tests/bench/test_bench_matching.py

The budget: 100k (citation, reference) pairs of 50–150-word passages in ≤ 5 s.
Seconds alone say little on a shared 2-core machine, so each figure is printed
beside a floor measured in the same run on the same pairs: a bare
pure-Python loop (``lower().split()``, sets of trigram tuples, one
intersection) that skips Unicode normalization and ``\\w+`` tokenization. The
assertion is on CPU seconds of this process (``time.process_time``), which
other processes on the machine do not inflate; wall seconds are printed too.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import pytest

from scoring.gold import gold_metrics
from scoring.matching import NgramMatcher

PAIRS = 100_000
BUDGET_SECONDS = 5.0


def make_passages(rng: np.random.Generator, count: int, vocabulary: list[str]) -> list[str]:
    """``count`` passages of 50–150 words drawn Zipf-like from ``vocabulary``,
    which holds each word in three surface forms (plain, Capitalized, with a
    trailing comma) so the tokenizer has real folding to do."""
    lengths = rng.integers(50, 151, size=count)
    ranks = np.arange(1, len(vocabulary) // 3 + 1)
    weights = 1.0 / ranks
    words = rng.choice(len(ranks), size=int(lengths.sum()), p=weights / weights.sum())
    forms = rng.choice(3, size=len(words), p=[0.88, 0.05, 0.07])
    surface = np.asarray(vocabulary, dtype=object)[words + forms * len(ranks)]
    ends = np.cumsum(lengths)
    return [" ".join(surface[end - n : end]) for n, end in zip(lengths, ends, strict=True)]


def make_pairs(count: int, seed: int = 20261130) -> list[tuple[str, str]]:
    """Every reference distinct (no cache can help): 40% of citations quote a
    span of their reference, 20% are the reference with one word in ten
    changed, 40% are unrelated passages."""
    rng = np.random.default_rng(seed)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    base = {"".join(rng.choice(letters, size=rng.integers(2, 11))) for _ in range(8000)}
    base_words = sorted(base)
    vocabulary = base_words + [w.capitalize() for w in base_words] + [w + "," for w in base_words]
    references = make_passages(rng, count, vocabulary)
    unrelated = make_passages(rng, count, vocabulary)
    pairs = []
    for k, reference in enumerate(references):
        kind = k % 5
        if kind in (0, 1):
            words = reference.split()
            start = int(rng.integers(0, len(words) // 2))
            pairs.append((" ".join(words[start : start + int(rng.integers(20, 60))]), reference))
        elif kind == 2:
            words = reference.split()
            for position in range(0, len(words), 10):
                words[position] = base_words[int(rng.integers(len(base_words)))]
            pairs.append((" ".join(words), reference))
        else:
            pairs.append((unrelated[k], reference))
    return pairs


def floor_loop(pairs: list[tuple[str, str]], threshold: float = 0.5) -> list[bool]:
    """The bare pure-Python floor: what any set-of-trigrams matcher costs."""
    verdicts = []
    for cited, reference in pairs:
        a, b = cited.lower().split(), reference.lower().split()
        grams_a = set(zip(a, a[1:], a[2:], strict=False))
        grams_b = set(zip(b, b[1:], b[2:], strict=False))
        verdicts.append(len(grams_a & grams_b) / min(len(grams_a), len(grams_b)) >= threshold)
    return verdicts


def timed(function, *args):
    wall, cpu = time.perf_counter(), time.process_time()
    result = function(*args)
    return result, time.perf_counter() - wall, time.process_time() - cpu


@pytest.mark.bench
def test_bench_ngram_100k_pairs():
    pairs, setup_wall, _ = timed(make_pairs, PAIRS)
    matcher = NgramMatcher()
    matcher.match_many(pairs[:1000])  # warm-up
    floor_loop(pairs[:1000])

    verdicts, wall, cpu = timed(matcher.match_many, pairs)
    floor, floor_wall, floor_cpu = timed(floor_loop, pairs)

    matched = sum(verdicts)
    print(
        f"\nngram match_many: {len(pairs):,} pairs in {wall:.2f} s wall / {cpu:.2f} s CPU "
        f"({cpu / len(pairs) * 1e6:.1f} µs/pair); {matched:,} matched"
        f"\npure-Python floor: {floor_wall:.2f} s wall / {floor_cpu:.2f} s CPU; "
        f"ratio ngram/floor = {cpu / floor_cpu:.2f} (CPU), {wall / floor_wall:.2f} (wall)"
        f"\n(setup {setup_wall:.1f} s)"
    )
    # quotes (40%) and light edits (20%) match, unrelated passages (40%) do not
    assert 0.55 * len(pairs) <= matched <= 0.65 * len(pairs)
    assert sum(floor) == pytest.approx(matched, rel=0.02)
    assert cpu <= BUDGET_SECONDS, f"ngram took {cpu:.2f} s CPU for {len(pairs):,} pairs"


@pytest.mark.bench
def test_bench_gold_metrics_20k_answers():
    """gold_metrics end to end: 20k answers, each with 3 citations and 3
    references, sources drawn from 2 (so about 4.5 same-source pairs per
    answer, ~90k matcher pairs), and 2 expected sources."""
    answers_count = 20_000
    rng = np.random.default_rng(7)
    pairs = make_pairs(answers_count * 3, seed=3)
    answer_ids = np.repeat(np.arange(answers_count), 3)
    sources = np.array(["Policy.pdf", "Handbook.pdf"], dtype=object)
    answers = pd.DataFrame(
        {
            "answer_id": np.arange(answers_count),
            "question_id": np.arange(answers_count) // 4,
            "has_references": True,
            "has_expected_sources": True,
        }
    )
    citations = pd.DataFrame(
        {
            "answer_id": answer_ids,
            "citation_id": np.arange(len(answer_ids)),
            "source": sources[rng.integers(0, 2, size=len(answer_ids))],
            "text": [cited for cited, _ in pairs],
        }
    )
    references = pd.DataFrame(
        {
            "answer_id": answer_ids,
            "source": sources[rng.integers(0, 2, size=len(answer_ids))],
            "text": [reference for _, reference in pairs],
        }
    )
    expected = pd.DataFrame(
        {
            "answer_id": np.repeat(np.arange(answers_count), 2),
            "source": np.tile(sources, answers_count),
        }
    )
    result, wall, cpu = timed(
        lambda: gold_metrics(answers, citations, references, expected, matcher=NgramMatcher())
    )
    summary = result.to_dict()
    print(
        f"\ngold_metrics: {answers_count:,} answers, {len(citations):,} citations, "
        f"{len(references):,} references in {wall:.2f} s wall / {cpu:.2f} s CPU; "
        f"context P = {summary['context']['precision']:.3f}, "
        f"R = {summary['context']['recall']:.3f}"
    )
    assert summary["context"]["answers"] == answers_count
