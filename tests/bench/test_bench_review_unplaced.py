"""Benchmark: the review page of an answer whose claims are not found in its text.

Run: ``pytest -m bench -s tests/bench/test_bench_review_unplaced.py`` (add
DATABASE_URL for PostgreSQL). One answer of ``N`` cited claims without offsets
(an import whose claims are paraphrases of the answer, say), N = 4,000 and
20,000; printed: the server time of the page (plain renderer, as in
``test_bench_review``), the time of ``screen.review_context`` alone, and a
reference figure for the machine's speed. The page used to compare every
claim with every unlocated claim (``view in review.unplaced`` in the template:
4,000 such claims took 7 s, 20,000 took 164 s); both figures should now grow
linearly with N.
"""

from __future__ import annotations

import time

import pytest
from django.db import connection
from django.template.base import Template
from django.test import Client
from django.test.utils import instrumented_test_render
from django.urls import reverse

from labeling.models import Answer, Citation, Claim, Passage, Project, Question, Reviewer, Run
from labeling.review import screen
from tests.bench.test_bench_review import reference_ms

pytestmark = pytest.mark.bench

PLAIN_RENDER = Template._render
assert PLAIN_RENDER is not instrumented_test_render


@pytest.fixture
def server_rendering(monkeypatch):
    monkeypatch.setattr(Template, "_render", PLAIN_RENDER)


def answer_with_unplaced_claims(count: int) -> tuple[Run, Answer, Reviewer]:
    project = Project.objects.create(slug=f"unplaced-{count}", name="Unplaced")
    reviewer = Reviewer.objects.create_user(username=f"bench-unplaced-{count}", password="pw-for-tests-1")
    project.members.add(reviewer)
    run = Run.objects.create(project=project, name="paraphrased")
    question = Question.objects.create(project=project, question_id="q1", text="What does the report find?")
    answer = Answer.objects.create(run=run, question=question, question_key="q1", content_hash="0" * 64,
                                   text="The report finds that costs fell by a fifth [1].")
    passage = Passage.objects.create(answer=answer, passage_id="1", position=0, source="report.pdf",
                                     text="Costs fell by a fifth over the period.")
    claims = Claim.objects.bulk_create(
        [Claim(answer=answer, index=k, text=f"Paraphrase {k} of the finding that costs went down.", start=None,
               end=None) for k in range(1, count + 1)], batch_size=5_000)
    Citation.objects.bulk_create([Citation(claim=c, passage=passage, position=0, cited_id="1") for c in claims],
                                 batch_size=5_000)
    return run, answer, reviewer


@pytest.mark.django_db
@pytest.mark.parametrize("count", [4_000, 20_000])
def test_bench_review_page_with_unplaced_claims(server_rendering, count):
    run, answer, reviewer = answer_with_unplaced_claims(count)
    client = Client()
    client.force_login(reviewer)
    url = reverse("answer_review", kwargs={"project_slug": run.project.slug, "run_name": run.name,
                                           "answer_id": answer.pk})

    started = time.perf_counter()
    review = screen.review_context(answer=answer, reviewer=reviewer)
    context_ms = (time.perf_counter() - started) * 1000
    started = time.perf_counter()
    response = client.get(url)
    page_ms = (time.perf_counter() - started) * 1000

    assert response.status_code == 200
    assert len(review.unplaced) == count
    html = response.content.decode()
    assert f"{count:,} claims could not be located" in html or f"{count} claims could not be located" in html
    assert html.count("not in text</span>") == count
    print(f"\n[bench-review-unplaced] {count:,} claims not in the answer text: page {page_ms:,.0f} ms, "
          f"review_context {context_ms:,.0f} ms ({connection.vendor}; reference loop {reference_ms():.0f} ms)")
