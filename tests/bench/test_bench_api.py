"""Benchmark of the API's label write against the review page's label step
(SPEC §6: "API label write p95 within 1.2× of the page's label step").

Run: ``pytest -m bench -s tests/bench/test_bench_api.py`` (add DATABASE_URL
for PostgreSQL). One 1k-answer run (5 claims an answer, 4 cited) of the
review benchmark's generator; reviewer ``bench-alice`` labels it through the
page (htmx POST, save + the next claim's fragment, as
``test_bench_review``), reviewer ``bench-bob`` through the API (``POST
…/claims/{id}/labels`` with his token: token lookup, run, claim, the save
and its audit event, the JSON). Both go through ``django.test.Client`` in
this process, in alternating blocks of 25 so that the machine's load (it is
shared) weighs on both alike. Prints p50/p95 of each and their ratio.
"""

from __future__ import annotations

import gc
import json
import time

import pytest
from django.test import Client
from django.urls import reverse

from labeling.integrations.tokens import token_create
from labeling.models import Claim, Label, Membership, Reviewer, Role
from tests.bench.test_bench_review import (
    bench_project,
    build_run,
    label_through_the_run,
    reference_ms,
    server_rendering,  # noqa: F401 (fixture)
    summary,
    timed,
    vacuum_analyze,
)

pytestmark = pytest.mark.bench

BLOCK = 25
BLOCKS = 12


@pytest.fixture(scope="module")
def dataset(django_db_setup, django_db_blocker):
    with django_db_blocker.unblock():
        started = time.perf_counter()
        project, alice, annotator, questions = bench_project("bench-api", member="bench-alice",
                                                             annotator="bench-api-annotator")
        run = build_run(project, questions, "api", 1_000, annotator)
        bob = Reviewer.objects.create_user(username="bench-bob", password="pw-for-tests-1")
        Membership.objects.create(project=project, reviewer=bob, role=Role.REVIEWER)
        secret = token_create(project=project, reviewer=bob, created_by=None, name="bench").secret
        vacuum_analyze()
        print(f"\n[bench-api] built {Claim.objects.filter(answer__run=run).count()} claims in "
              f"{time.perf_counter() - started:.1f} s")
        del questions
        gc.collect()
        yield {"project": project, "run": run, "alice": alice, "bob": bob, "secret": secret}
        Label.objects.filter(claim__answer__run__project=project).delete()
        project.delete()
        Reviewer.objects.filter(pk__in=[alice.pk, bob.pk, annotator.pk]).delete()


@pytest.mark.django_db
def test_bench_api_label_write_against_the_page_label_step(dataset, server_rendering):  # noqa: F811
    print(f"\n[bench-api] reference: 1M-addition loop {reference_ms():.1f} ms")
    run, slug = dataset["run"], dataset["project"].slug
    page = Client()
    page.force_login(dataset["alice"])
    api = Client()
    headers = {"Authorization": f"Bearer {dataset['secret']}"}
    cited = list(Claim.objects.filter(answer__run=run, citations__isnull=False).distinct()
                 .order_by("answer__question_key", "index").values_list("pk", flat=True))

    def api_write(claim_id: int, n: int):
        body = {"value": "UNSUPPORTED", "justification": "only part of it"} if n % 4 == 3 else {"value": "SUPPORTED"}
        url = reverse("api:label_create", kwargs={"slug": slug, "run": run.name, "claim_id": claim_id})
        return api.post(url, json.dumps({**body, "revision": 1, "base_label": None}),
                        content_type="application/json", headers=headers)

    # Warm both paths.
    label_through_the_run(page, run, dataset["alice"], 5)
    for n in range(5):
        assert api_write(cited[n], n).status_code == 201
    page_times, page_queries, api_times, api_queries = [], [], [], []
    position = 5
    for _ in range(BLOCKS):
        times, queries = label_through_the_run(page, run, dataset["alice"], BLOCK)
        page_times += times
        page_queries += queries
        for n in range(BLOCK):
            k = position + n
            response, elapsed, count = timed(lambda k=k: api_write(cited[k], k))
            assert response.status_code == 201, response.content[:300]
            api_times.append(elapsed)
            api_queries.append(count)
        position += BLOCK
    print(summary("page label step (save + next claim fragment), 1k-answer run", page_times, page_queries))
    print(summary("API label write (POST …/claims/{id}/labels), 1k-answer run", api_times, api_queries))
    p95 = {name: sorted(times)[int(round(0.95 * len(times))) - 1]
           for name, times in (("page", page_times), ("api", api_times))}
    print(f"[bench-api] API p95 / page p95 = {p95['api'] / p95['page']:.2f} (target ≤ 1.2)")
    assert Label.objects.filter(reviewer=dataset["bob"], is_current=True).count() == 5 + BLOCK * BLOCKS
    # A fixed number of queries per write, whatever the claim.
    assert min(api_queries) >= max(api_queries) - 1
