"""Benchmark of the reviewer dashboard (SPEC §4.4: "the dashboard on a 50k-claim run
with 5 reviewers answers in ≤ 300 ms").

The run is the labeling-screen benchmark's shape (10k answers × 5 claims, 4 cited per
answer: 50k claims, 40k cited). Five human reviewers label it at overlap 2: every cited
claim gets two labels (80k current labels), UNSUPPORTED about one in six, the pair
disagreeing on every 13th claim; each reviewer's saves are 4–40 s apart with a
20-minute break every 200 saves; a relabel on every 50th claim adds history rows. One in 21
of the cited claims is gold (1,905: every reviewer meets some), 1 % of the disputes adjudicated, 25 send-backs open.
A rule (0.7 after 20) is set, so "qualified" is computed too.

Printed: the dashboard page's whole request (server time, p50 of 5 after a warm-up, and
its queries), ``quality.run_dashboard`` alone, and ``reviewers --format json``. No
ANALYZE has run on SQLite; PostgreSQL is VACUUM ANALYZEd as autovacuum would.

Run: ``pytest -m bench -s tests/bench/test_bench_dashboard.py`` (DATABASE_URL=… for
PostgreSQL).
"""

from __future__ import annotations

import gc
import io
import statistics
import time
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.db import connection
from django.template.base import Template
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from labeling.models import Adjudication, Claim, GoldClaim, Label, Membership, Reviewer, SendBack
from labeling.team.quality import run_dashboard
from tests.bench.test_bench_review import (
    BIG_ANSWERS,
    PLAIN_RENDER,
    bench_project,
    build_run,
    reference_ms,
    vacuum_analyze,
)

pytestmark = pytest.mark.bench

SLUG = "bench-quality"
REVIEWERS = 5


@pytest.fixture(scope="module")
def quality_run(django_db_setup, django_db_blocker):
    with django_db_blocker.unblock():
        started = time.perf_counter()
        project, lead, annotator, questions = bench_project(SLUG, member="bench-quality-lead",
                                                            annotator="bench-quality-importer")
        Membership.objects.filter(project=project, reviewer=lead).update(role="lead")
        run = build_run(project, questions, "big", BIG_ANSWERS, annotator)
        Label.objects.filter(reviewer=annotator).delete()
        run.qualify_min_lower, run.qualify_min_gold = 0.7, 20
        run.overlap = 2
        run.save()
        people = [Reviewer.objects.create_user(username=f"bench-rev{n}", password="pw-for-tests-1")
                  for n in range(REVIEWERS)]
        for person in people:
            Membership.objects.create(project=project, reviewer=person, role="reviewer")
        cited = list(Claim.objects.filter(answer__run=run, citations__isnull=False).order_by("pk")
                     .values_list("pk", flat=True).distinct())
        clocks = {person.pk: timezone.now() - timedelta(days=60) for person in people}
        saves = {person.pk: 0 for person in people}
        created = Label._meta.get_field("created_at")
        labels = []

        def save(claim_id: int, person: Reviewer, value: str, current: bool = True) -> None:
            saves[person.pk] += 1
            step = 1_200 if saves[person.pk] % 200 == 0 else 4 + (claim_id * 7 + person.pk) % 37
            clocks[person.pk] += timedelta(seconds=step)
            labels.append(Label(claim_id=claim_id, reviewer=person, value=value, claim_revision=1,
                                is_current=current, created_at=clocks[person.pk],
                                justification="" if value == "SUPPORTED" else "not in the passage"))

        for n, claim_id in enumerate(cited):
            a, b = people[n % REVIEWERS], people[(n + 1) % REVIEWERS]
            value = "UNSUPPORTED" if n % 6 == 0 else "SUPPORTED"
            other = ("SUPPORTED" if value == "UNSUPPORTED" else "UNSUPPORTED") if n % 13 == 0 else value
            if n % 50 == 0:
                save(claim_id, a, other, current=False)
            save(claim_id, a, value)
            save(claim_id, b, other)
        created.auto_now_add = False  # the built save times, not the time of the build
        try:
            Label.objects.bulk_create(labels, batch_size=10_000)
        finally:
            created.auto_now_add = True
        GoldClaim.objects.bulk_create(
            [GoldClaim(run=run, claim_id=claim_id, value="UNSUPPORTED" if n % 6 == 0 else "SUPPORTED",
                       reason="known", source="file", lead=lead, claim_revision=1)
             for n, claim_id in enumerate(cited) if n % 21 == 0], batch_size=5_000)
        Adjudication.objects.bulk_create(
            [Adjudication(claim_id=claim_id, lead=lead, value="SUPPORTED", reason="settled", claim_revision=1)
             for n, claim_id in enumerate(cited) if n % 1_300 == 0])
        current = {(row[0], row[1]): row[2] for row in Label.objects.filter(
            claim__answer__run=run, is_current=True).values_list("claim_id", "reviewer_id", "pk")[:200_000]}
        SendBack.objects.bulk_create(
            [SendBack(run=run, claim_id=claim_id, reviewer_id=reviewer_id, label_id=label_id, lead=lead,
                      comment="look again") for (claim_id, reviewer_id), label_id in list(current.items())[:25]])
        vacuum_analyze()
        print(f"\n[bench-quality] built {Claim.objects.filter(answer__run=run).count()} claims, "
              f"{len(labels)} labels ({len(cited)} cited claims × 2 + history), "
              f"{GoldClaim.objects.filter(run=run).count()} gold claims in {time.perf_counter() - started:.1f} s "
              f"({connection.vendor})")
        del questions, current
        labels.clear()
        gc.collect()
        yield {"project": project, "run": run, "lead": lead}
        SendBack.objects.filter(run=run).delete()
        Label.objects.filter(claim__answer__run__project=project).delete()
        Adjudication.objects.filter(claim__answer__run__project=project).delete()
        project.delete()
        Reviewer.objects.filter(username__startswith="bench-quality").delete()
        Reviewer.objects.filter(username__startswith="bench-rev").delete()


def _p50(call) -> tuple[float, int]:
    call()
    times, queries = [], []
    for _ in range(5):
        with CaptureQueriesContext(connection) as captured:
            started = time.perf_counter()
            call()
            times.append((time.perf_counter() - started) * 1000)
        queries.append(len(captured.captured_queries))
    return statistics.median(times), max(queries)


@pytest.mark.django_db
def test_bench_reviewer_dashboard_on_a_50k_claim_run(quality_run, monkeypatch):
    monkeypatch.setattr(Template, "_render", PLAIN_RENDER)  # render as a server does (see test_bench_review)
    print(f"\n[bench-quality] reference: 1M-addition loop {reference_ms():.1f} ms")
    run = quality_run["run"]
    client = Client()
    client.force_login(quality_run["lead"])
    url = reverse("run_dashboard", kwargs={"project_slug": SLUG, "run_name": run.name})
    response = client.get(url)
    assert response.status_code == 200 and 'id="reviewer-bench-rev4"' in response.content.decode()
    board = run_dashboard(run=run)
    rows = {row.reviewer: row for row in board.rows}
    assert sum(row.labels for row in board.rows) == 2 * Claim.objects.filter(
        answer__run=run, citations__isnull=False).distinct().count()
    assert all(row.gold_total > 0 and row.kappa is not None and row.median_seconds for row in rows.values()), [
        (row.reviewer, row.gold_total, row.kappa, row.median_seconds) for row in board.rows]
    page, page_queries = _p50(lambda: client.get(url))
    selector, selector_queries = _p50(lambda: run_dashboard(run=run))
    command, _ = _p50(lambda: call_command("reviewers", "--run", run.name, "--project", SLUG, "--format", "json",
                                           stdout=io.StringIO()))
    print(f"[bench-quality] dashboard page: p50 {page:.0f} ms, {page_queries} queries ({connection.vendor})")
    print(f"[bench-quality] quality.run_dashboard: p50 {selector:.0f} ms, {selector_queries} queries")
    print(f"[bench-quality] reviewers --format json: p50 {command:.0f} ms")
    for row in board.rows:
        print(f"[bench-quality]   {row.reviewer}: {row.labels} labels, median {row.median_seconds:.1f} s, "
              f"kappa {row.kappa:.3f}, gold {row.gold_correct}/{row.gold_total}")
