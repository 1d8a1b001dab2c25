"""Benchmarks of the labeling screen.

Run: ``pytest -m bench -s tests/bench/test_bench_review.py`` (add DATABASE_URL
for PostgreSQL). One database of 100k claims is built with bulk_create: run
``big`` (10k answers × 5 claims) and ten runs of 1k answers. Printed figures:

- saving a label and getting the next claim's fragment (htmx POST through
  ``django.test.Client``, the whole request: session, auth, service, queue,
  rendering): p50/p95/max ms and the query count, on a 1k-answer run and on
  the 10k-answer run — the query count must not grow with the data;
- the run progress bar fragment that refreshes after each save;
- the run page of the 10k-answer run (target ≤ 150 ms), first and a late
  page, and with the "unlabeled" filter; and its totals fragment, which a
  run over 1,000 answers loads by htmx once the page is shown.

Server time: pytest-django instruments template rendering for the test
client, which then copies the whole context at every template and partial it
renders (test-only work, several ms on the review fragments); the timed
requests run with Django's plain renderer. Each test also prints a reference
figure (a fixed pure-Python loop) so runs on machines of different speed can be
compared: on the shared 2-core machines here it varies by ±40 % within minutes.
"""

from __future__ import annotations

import gc
import os
import re
import statistics
import time
from urllib.parse import urlencode

import pytest
from django.db import connection
from django.template.base import Template
from django.test import Client
from django.test.utils import CaptureQueriesContext, instrumented_test_render
from django.urls import reverse

from labeling.models import Answer, Citation, Claim, Label, Passage, Project, Question, Reviewer, Run

pytestmark = pytest.mark.bench

# Collected before pytest-django sets up the test environment: Django's own renderer.
PLAIN_RENDER = Template._render
assert PLAIN_RENDER is not instrumented_test_render

CLAIMS_PER_ANSWER = 5
SMALL_RUNS = 10
SMALL_ANSWERS = 1_000
BIG_ANSWERS = 10_000
PASSAGE = ("The report describes how the committee reviewed the evidence over several months and found that "
           "the programme reduced costs by a fifth while keeping the service levels stable for most users.")


def bench_project(slug: str, *, member: str, annotator: str) -> tuple[Project, Reviewer, Reviewer, list[Question]]:
    """Project ``slug`` with ``member`` (a reviewer who can log in, password
    ``pw-for-tests-1``), an external ``annotator`` whose labels ``build_run``
    imports, and BIG_ANSWERS questions q00000, q00001, …"""
    project = Project.objects.create(slug=slug, name=slug.replace("-", " ").capitalize())
    reviewer = Reviewer.objects.create_user(username=member, password="pw-for-tests-1")
    project.members.add(reviewer)
    external = Reviewer.objects.create(username=annotator, kind="external")
    questions = Question.objects.bulk_create(
        [Question(project=project, question_id=f"q{i:05d}", text=f"Question {i}?") for i in range(BIG_ANSWERS)],
        batch_size=5_000)
    return project, reviewer, external, questions


def vacuum_analyze() -> None:
    """On PostgreSQL, planner statistics and visibility map as autovacuum keeps them in
    production (and so that autovacuum does not start on the fresh rows while requests
    are timed)."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("VACUUM ANALYZE")


def build_run(project: Project, questions: list[Question], name: str, answers: int, annotator: Reviewer) -> Run:
    run = Run.objects.create(project=project, name=name)
    sentences = [f"Claim {k} says the programme reduced costs by a fifth in region {k}." for k in range(1, 6)]
    text = " ".join(sentences)
    rows = Answer.objects.bulk_create(
        [Answer(run=run, question=questions[i], question_key=questions[i].question_id, text=text,
                content_hash=f"{i:064x}") for i in range(answers)],
        batch_size=2_000)
    passages = Passage.objects.bulk_create(
        [Passage(answer=a, passage_id=f"P{p}", position=p, source=f"https://example.org/{p}", text=PASSAGE)
         for a in rows for p in range(1, 4)], batch_size=5_000)
    claims = []
    for answer in rows:
        cursor = 0
        for k, sentence in enumerate(sentences, start=1):
            claims.append(Claim(answer=answer, index=k, text=sentence, start=cursor, end=cursor + len(sentence)))
            cursor += len(sentence) + 1
    Claim.objects.bulk_create(claims, batch_size=5_000)
    citations, labels = [], []
    for n, claim in enumerate(claims):
        if claim.index == 5:
            continue  # one uncited claim per answer
        passage = passages[(n // CLAIMS_PER_ANSWER) * 3 + claim.index % 3]
        citations.append(Citation(claim=claim, passage=passage, position=0, cited_id=passage.passage_id,
                                  span="reduced costs by a fifth" if claim.index == 1 else ""))
        if n % 3 == 0:
            labels.append(Label(claim=claim, reviewer=annotator, value="SUPPORTED" if n % 2 else "UNSUPPORTED",
                                justification="imported", claim_revision=1))
    Citation.objects.bulk_create(citations, batch_size=5_000)
    Label.objects.bulk_create(labels, batch_size=5_000)
    return run


@pytest.fixture(scope="module")
def dataset(django_db_setup, django_db_blocker):
    with django_db_blocker.unblock():
        started = time.perf_counter()
        project, reviewer, annotator, questions = bench_project("bench-review", member="bench-alice",
                                                                annotator="bench-annotator")
        runs = [build_run(project, questions, f"small-{r}", SMALL_ANSWERS, annotator) for r in range(SMALL_RUNS)]
        big = build_run(project, questions, "big", BIG_ANSWERS, annotator)
        vacuum_analyze()
        claims = Claim.objects.filter(answer__run__project=project).count()
        print(f"\n[bench-review] built {claims} claims in {time.perf_counter() - started:.1f} s "
              f"({connection.vendor})")
        # The 10k built questions would stay alive in this frame: the timed requests
        # would pay for the collector walking them, which a server process does not.
        del questions
        gc.collect()
        yield {"project": project, "reviewer": reviewer, "small": runs[0], "big": big}
        Label.objects.filter(claim__answer__run__project=project).delete()
        project.delete()
        Reviewer.objects.filter(pk__in=[reviewer.pk, annotator.pk]).delete()


@pytest.fixture
def server_rendering(monkeypatch):
    """Render templates as a server does, without the test client's context copies."""
    monkeypatch.setattr(Template, "_render", PLAIN_RENDER)


def reference_ms() -> float:
    """Milliseconds of a fixed pure-Python loop (best of 5): how fast this machine is right now."""
    best = float("inf")
    for _ in range(5):
        started = time.perf_counter()
        total = 0
        for i in range(1_000_000):
            total += i
        best = min(best, (time.perf_counter() - started) * 1000)
    return best


def timed(call):
    with CaptureQueriesContext(connection) as queries:
        started = time.perf_counter()
        response = call()
        elapsed = (time.perf_counter() - started) * 1000
    return response, elapsed, len(queries.captured_queries)


def summary(label: str, times: list[float], queries: list[int]) -> str:
    times = sorted(times)
    p95 = times[max(0, int(round(0.95 * len(times))) - 1)]
    return (f"[bench-review] {label}: n={len(times)} p50={statistics.median(times):.1f} ms "
            f"p95={p95:.1f} ms max={times[-1]:.1f} ms queries={min(queries)}–{max(queries)} ({connection.vendor}, "
            f"load {os.getloadavg()[0]:.2f})")


def label_through_the_run(client: Client, run: Run, reviewer: Reviewer, saves: int) -> tuple[list, list]:
    """Label ``saves`` claims in queue order the way the page does: POST, read the next claim from HX-Push-Url."""
    slug = run.project.slug
    response = client.get(reverse("run_next", kwargs={"project_slug": slug, "run_name": run.name}))
    claim_id = int(response.url.rsplit("claim=", 1)[1])
    times, queries = [], []
    form = {"claim": claim_id, "revision": 1, "base_label": ""}
    for n in range(saves):
        url = reverse("claim_label", kwargs={"project_slug": slug, "run_name": run.name, "claim_id": claim_id})
        # Every fourth decision is UNSUPPORTED with a justification, as in real review.
        data = {"value": "UNSUPPORTED", "justification": "only part of it"} if n % 4 == 3 else {"value": "SUPPORTED"}
        # Form-encoded, as htmx posts a form (the test client would send multipart).
        body = urlencode({**form, **data})
        response, elapsed, count = timed(lambda url=url, body=body: client.post(
            url, body, content_type="application/x-www-form-urlencoded", HTTP_HX_REQUEST="true"))
        assert response.status_code == 200, response.content[:300]
        html = response.content.decode()
        assert "Saved" in html
        times.append(elapsed)
        queries.append(count)
        claim_id = int(response["HX-Push-Url"].rsplit("claim=", 1)[1])
        # Post back the hidden fields of the label form the response carries, as the page does.
        form = dict(re.findall(r'<input type="hidden" name="(claim|revision|base_label|more_in_answer)" value="(\d*)"',
                               html.split('id="label-form"', 1)[1]))
    return times, queries


@pytest.mark.django_db
def test_bench_save_label_and_next_claim(dataset, server_rendering):
    print(f"\n[bench-review] reference: 1M-addition loop {reference_ms():.1f} ms")
    client = Client()
    client.force_login(dataset["reviewer"])
    label_through_the_run(client, dataset["small"], dataset["reviewer"], 10)  # warm caches

    small_times, small_queries = label_through_the_run(client, dataset["small"], dataset["reviewer"], 300)
    big_times, big_queries = label_through_the_run(client, dataset["big"], dataset["reviewer"], 300)

    print(summary("save label + next claim fragment, 1k-answer run", small_times, small_queries))
    print(summary("save label + next claim fragment, 10k-answer run", big_times, big_queries))
    # The query count does not grow with the data (a fixed number per request).
    assert max(small_queries) == max(big_queries)
    assert Label.objects.filter(reviewer=dataset["reviewer"], is_current=True).count() == 610

    progress = reverse("run_progress", kwargs={"project_slug": dataset["project"].slug, "run_name": "big"})
    runs = [timed(lambda: client.get(progress, HTTP_HX_REQUEST="true")) for _ in range(30)]
    print(summary("run progress fragment (refreshes after a save), 10k-answer run", [t for _r, t, _q in runs],
                  [q for _r, _t, q in runs]))


@pytest.mark.django_db
def test_bench_run_page_with_10k_answers(dataset, server_rendering):
    print(f"\n[bench-review] reference: 1M-addition loop {reference_ms():.1f} ms")
    client = Client()
    client.force_login(dataset["reviewer"])
    url = reverse("run_detail", kwargs={"project_slug": dataset["project"].slug, "run_name": "big"})
    client.get(url)  # warm caches

    for label, params in [("run page, 10k answers, page 1", {}), ("run page, 10k answers, page 150", {"page": 150}),
                          ("run page, 10k answers, filter unlabeled", {"filter": "unlabeled"})]:
        results = [timed(lambda: client.get(url, params)) for _ in range(15)]  # noqa: B023
        assert all(r.status_code == 200 for r, _t, _q in results)
        print(summary(label, [t for _r, t, _q in results], [q for _r, _t, q in results]))

    project_url = dataset["project"].get_absolute_url()
    results = [timed(lambda: client.get(project_url)) for _ in range(7)]
    print(summary("project page, 11 runs, 100k claims (every run's figures)", [t for _r, t, _q in results],
                  [q for _r, _t, q in results]))
    totals = reverse("run_summary", kwargs={"project_slug": dataset["project"].slug, "run_name": "big"})
    results = [timed(lambda: client.get(totals, HTTP_HX_REQUEST="true")) for _ in range(15)]
    print(summary("run totals fragment (loaded by htmx after the page), 10k answers",
                  [t for _r, t, _q in results], [q for _r, _t, q in results]))
    from labeling.review import screen, tallies
    from labeling.scores import charts

    run, reviewer = dataset["big"], dataset["reviewer"]
    parts = {
        "answer_page (count + ids + 50 rows)": lambda: screen.answer_page(run=run, reviewer=reviewer),
        "run_counts (one aggregate)": lambda: tallies.run_counts(run=run, reviewer=reviewer),
        "charts.run_scatter (the scatter section)": lambda: charts.run_scatter(run),
    }
    for label, call in parts.items():
        results = [timed(call) for _ in range(7)]
        print(summary(f"  of which {label}", [t for _r, t, _q in results], [q for _r, _t, q in results]))
