"""Benchmark of the agreement page on a 50k-claim run labeled by 3 reviewers.

Run: ``pytest -m bench -s tests/bench/test_bench_agreement.py`` (add DATABASE_URL
for PostgreSQL). The run is built by the labeling-screen benchmark's generator
(10k answers × 5 claims, 4 cited per answer); its imported labels are replaced by
three reviewers who each label all 40k cited claims (120k labels): ``ann`` gives
UNSUPPORTED to every fifth claim, ``ben`` differs from her on every 11th claim,
``cleo`` on every 7th. Printed: the whole request's server time (session, auth, the
labels query, every pair's kappa, alpha and AC1 with their 2,000 bootstrap resamples,
the first page of disagreements, rendering), p50 of 5 after a warm-up, with its
query count, and the figures alone without the request.
"""

from __future__ import annotations

import statistics
import time

import pytest
from django.db import connection
from django.template.base import Template
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from labeling.models import Claim, Label, Reviewer
from labeling.team.agreement import run_agreement
from tests.bench.test_bench_review import (
    BIG_ANSWERS,
    PLAIN_RENDER,
    bench_project,
    build_run,
    reference_ms,
    vacuum_analyze,
)

pytestmark = pytest.mark.bench


@pytest.fixture(scope="module")
def agreement_run(django_db_setup, django_db_blocker):
    with django_db_blocker.unblock():
        started = time.perf_counter()
        project, lead, annotator, questions = bench_project("bench-agreement", member="bench-lead",
                                                            annotator="bench-importer")
        run = build_run(project, questions, "big", BIG_ANSWERS, annotator)
        Label.objects.filter(reviewer=annotator).delete()
        reviewers = [Reviewer.objects.create(username=name, kind="external") for name in ("ann", "ben", "cleo")]
        cited = list(Claim.objects.filter(answer__run=run, citations__isnull=False).order_by("pk")
                     .values_list("pk", flat=True).distinct())
        other = {"SUPPORTED": "UNSUPPORTED", "UNSUPPORTED": "SUPPORTED"}
        labels = []
        for n, claim_id in enumerate(cited):
            base = "UNSUPPORTED" if n % 5 == 0 else "SUPPORTED"
            for reviewer, every in zip(reviewers, (0, 11, 7), strict=True):
                value = other[base] if every and n % every == 0 else base
                labels.append(Label(claim_id=claim_id, reviewer=reviewer, value=value, claim_revision=1,
                                    justification="not what the passage says" if value == "UNSUPPORTED" else ""))
        Label.objects.bulk_create(labels, batch_size=10_000)
        vacuum_analyze()
        print(f"\n[bench-agreement] built {Claim.objects.filter(answer__run=run).count()} claims, "
              f"{len(labels)} labels in {time.perf_counter() - started:.1f} s ({connection.vendor})")
        del questions, labels
        yield {"project": project, "run": run, "lead": lead}
        Label.objects.filter(claim__answer__run__project=project).delete()
        project.delete()
        Reviewer.objects.filter(username__in=["bench-lead", "bench-importer", "ann", "ben", "cleo"]).delete()


@pytest.mark.django_db
def test_bench_agreement_page_50k_claims_3_reviewers(agreement_run, monkeypatch):
    monkeypatch.setattr(Template, "_render", PLAIN_RENDER)  # render as a server does (see test_bench_review)
    print(f"\n[bench-agreement] reference: 1M-addition loop {reference_ms():.1f} ms")
    run = agreement_run["run"]
    client = Client()
    client.force_login(agreement_run["lead"])
    url = reverse("run_agreement", kwargs={"project_slug": "bench-agreement", "run_name": run.name})
    assert client.get(url).status_code == 200  # warm-up

    times, queries = [], []
    for _ in range(5):
        with CaptureQueriesContext(connection) as captured:
            started = time.perf_counter()
            response = client.get(url)
            times.append((time.perf_counter() - started) * 1000)
        queries.append(len(captured.captured_queries))
        assert response.status_code == 200
    assert "Reviewer agreement" in response.content.decode()
    figures = []
    for _ in range(5):
        started = time.perf_counter()
        result = run_agreement(run=run)
        figures.append((time.perf_counter() - started) * 1000)
    assert len(result.pairs) == 3 and result.overall.alpha.n == 40_000

    overall = result.overall
    print(f"[bench-agreement] alpha {overall.alpha.value:.3f} {overall.alpha.ci95}, AC1 {overall.ac1.value:.3f}, "
          f"{len(result.disputed)} disputed claims")
    print(f"[bench-agreement] agreement page, 50k claims, 3 reviewers: p50 {statistics.median(times):.0f} ms "
          f"(min {min(times):.0f}, max {max(times):.0f}), {max(queries)} queries ({connection.vendor})")
    print(f"[bench-agreement] labels query + figures alone (labeling.team.agreement.run_agreement): "
          f"p50 {statistics.median(figures):.0f} ms")
