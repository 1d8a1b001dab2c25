"""Benchmark: 100k claims imported in ≤ 30 s with bounded memory.

Run: ``pytest -m bench -s tests/bench/test_bench_import.py`` (add DATABASE_URL for PostgreSQL).
Prints seconds and the peak resident memory growth (RSS sampled every 20 ms;
tracemalloc would slow the import several times) for 20k and 100k claims: a
streaming import keeps the peak roughly flat as the file grows.
"""

from __future__ import annotations

import json
import time

import pytest

from labeling.answers_import import run_import
from labeling.models import Claim
from tests.bench.memory import RssPeak
from tests.factories import ProjectFactory

CLAIMS_PER_ANSWER = 6


def write_answers(path, answers: int) -> None:
    with path.open("w") as handle:
        for n in range(answers):
            passages = [{"id": f"P{k}", "source": f"https://example.org/doc{n % 500}/{k}",
                         "text": f"Passage {k} of answer {n}: " + "retrieved evidence text " * 12} for k in range(1, 4)]
            claims = [{"text": f"Claim {c} of answer {n} states a checkable fact [P{c % 3 + 1}].",
                       "citations": [{"passage_id": f"P{c % 3 + 1}"}] if c % 5 else [],
                       "label": ("SUPPORTED" if c % 2 else "UNSUPPORTED") if c % 5 else "UNCITED",
                       "reviewer": "bench-annotator"} for c in range(CLAIMS_PER_ANSWER)]
            handle.write(json.dumps({"question_id": f"q{n}", "question": f"Question {n}?", "run": "bench",
                                     "answer": " ".join(c["text"] for c in claims), "passages": passages,
                                     "claims": claims}) + "\n")


@pytest.mark.bench
@pytest.mark.django_db(transaction=True)
def test_bench_import_100k_claims(tmp_path):
    figures = []
    for claims in (20_000, 100_002):
        answers = claims // CLAIMS_PER_ANSWER
        path = tmp_path / f"answers_{answers}.jsonl"
        write_answers(path, answers)
        project = ProjectFactory(slug=f"bench-{answers}")
        with RssPeak() as memory:
            started = time.perf_counter()
            report = run_import(project=project, source=path)
            seconds = time.perf_counter() - started
        assert report.claims_created == answers * CLAIMS_PER_ANSWER
        figures.append((answers * CLAIMS_PER_ANSWER, seconds, memory.peak_mb, path.stat().st_size / 2**20))
    for claims, seconds, peak_mb, file_mb in figures:
        print(f"\nimport {claims} claims ({file_mb:.0f} MiB file): {seconds:.1f} s, "
              f"{claims / seconds:,.0f} claims/s, peak RSS growth {peak_mb:.0f} MiB")
    assert Claim.objects.count() == sum(f[0] for f in figures)
    assert figures[1][1] <= 30, "100k claims must import in at most 30 s"
