"""Benchmark: 100k claims imported in ≤ 30 s with bounded memory.

Run: ``pytest -m bench -s tests/bench/test_bench_import.py`` (add DATABASE_URL for PostgreSQL).
Prints seconds and the peak resident memory growth (RSS sampled every 20 ms;
tracemalloc would slow the import several times) for 20k and 100k claims: a
streaming import keeps the peak roughly flat as the file grows.
"""

from __future__ import annotations

import time

import pytest

from labeling.answers_import import run_import
from labeling.models import Claim
from tests.bench.answers_file import CLAIMS_PER_ANSWER, write_answers
from tests.bench.memory import RssPeak
from tests.factories import ProjectFactory


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
