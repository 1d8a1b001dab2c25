"""Benchmark of the label step as the page takes it with the next claim held ready.

Run: ``pytest -m bench -s tests/bench/test_bench_review_ahead.py`` (add DATABASE_URL
for PostgreSQL). The database of tests/bench/test_bench_review.py (100k claims).

With the next claim held ready (issue 24, target 2) a label step is two requests:
the save, acknowledged out of band (``Citelab-Ack``: no claim panel rendered), and,
once the page shows the next claim, the fetch of the claim after it
(``claim_next``), which the reviewer does not wait for. Printed, interleaved on
two 1k-answer runs so both see the same machine: the save the page waits for,
the fetch behind it, their sum (the server's work a step), and the step of a
page without the claim held ready (save + next claim's fragment) — p50/p95/max ms
and query counts, through ``django.test.Client`` with Django's plain renderer.
"""

from __future__ import annotations

import os
import re
from urllib.parse import urlencode

import pytest
from django.test import Client
from django.urls import reverse

from labeling.models import Reviewer, Run
from tests.bench.test_bench_review import (  # noqa: F401 (pytest fixtures)
    dataset,
    label_through_the_run,
    reference_ms,
    server_rendering,
    summary,
    timed,
)

pytestmark = pytest.mark.bench

HIDDEN = re.compile(r'<input type="hidden" name="(claim|revision|base_label|more_in_answer)" value="(\d*)"')


def url(name: str, run: Run, **kwargs) -> str:
    return reverse(name, kwargs={"project_slug": run.project.slug, "run_name": run.name, **kwargs})


def label_ahead_through_the_run(client: Client, run: Run, reviewer: Reviewer, saves: int) -> dict[str, list]:
    """Label ``saves`` claims as the page does with the next claim held ready: fetch
    ``claim_next`` for the claim shown, save with ``prefetched`` naming it, and go on
    from the claim held ready (every save must be acknowledged)."""
    response = client.get(url("run_next", run))
    claim_id = int(response.url.rsplit("claim=", 1)[1])
    form = {"claim": claim_id, "revision": 1, "base_label": ""}
    times: dict[str, list] = {"save": [], "fetch": [], "save queries": [], "fetch queries": []}
    ahead, elapsed, count = timed(lambda: client.get(url("claim_next", run, claim_id=claim_id)))
    for n in range(saves):
        data = {"value": "UNSUPPORTED", "justification": "only part of it"} if n % 4 == 3 else {"value": "SUPPORTED"}
        body = urlencode({**form, **data, "prefetched": ahead["Citelab-Next-Claim"],
                          "prefetched_state": ahead["Citelab-Next-State"]})
        response, elapsed, count = timed(lambda claim_id=claim_id, body=body: client.post(
            url("claim_label", run, claim_id=claim_id), body, content_type="application/x-www-form-urlencoded",
            HTTP_HX_REQUEST="true"))
        assert response["Citelab-Ack"] == str(claim_id), response.content[:300]
        times["save"].append(elapsed)
        times["save queries"].append(count)
        claim_id = int(ahead["Citelab-Next-Claim"])
        form = dict(HIDDEN.findall(ahead.content.decode().split('id="label-form"', 1)[1]))
        ahead, elapsed, count = timed(lambda claim_id=claim_id: client.get(url("claim_next", run, claim_id=claim_id)))
        assert ahead.status_code == 200
        times["fetch"].append(elapsed)
        times["fetch queries"].append(count)
    return times


@pytest.mark.django_db
def test_bench_label_step_with_the_next_claim_held_ready(dataset, server_rendering):  # noqa: F811 (fixtures)
    print(f"\n[bench-review] reference: 1M-addition loop {reference_ms():.1f} ms, load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    reviewer = dataset["reviewer"]
    client = Client()
    client.force_login(reviewer)
    ahead_run = dataset["small"]
    plain_run = Run.objects.get(project=ahead_run.project, name="small-1")
    label_ahead_through_the_run(client, ahead_run, reviewer, 10)  # warm caches
    label_through_the_run(client, plain_run, reviewer, 10)

    ahead = {"save": [], "fetch": [], "save queries": [], "fetch queries": []}
    plain, plain_queries = [], []
    for _ in range(6):  # interleaved rounds of 50 steps
        for key, values in label_ahead_through_the_run(client, ahead_run, reviewer, 50).items():
            ahead[key] += values
        times, queries = label_through_the_run(client, plain_run, reviewer, 50)
        plain += times
        plain_queries += queries
    print(summary("held ready: the save (acknowledged)", ahead["save"], ahead["save queries"]))
    print(summary("held ready: fetch of the claim after it", ahead["fetch"], ahead["fetch queries"]))
    print(summary("held ready: server work a step (save + fetch)",
                  [s + f for s, f in zip(ahead["save"], ahead["fetch"], strict=True)],
                  [s + f for s, f in zip(ahead["save queries"], ahead["fetch queries"], strict=True)]))
    print(summary("not held ready: save + next claim's fragment", plain, plain_queries))
    print(f"[bench-review] load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
