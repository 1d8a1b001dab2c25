"""Benchmark: two runs of 10k answers (~60k claims each) compared in ≤ 10 s.
Run with ``pytest -m bench -s tests/bench/test_bench_compare.py``
(add DATABASE_URL for PostgreSQL).

Three figures are printed: ``scoring.compare.compare_runs`` on frames (a
realistic diff: 80 % of claims unchanged, 15 % reworded, 5 % removed, 5 %
new), the same with every claim reworded (no exact match: the fuzzy path for
all claims), and ``labeling.tables.comparison.run_comparison`` end to end from the
database (12 queries plus the comparison).
"""

from __future__ import annotations

import random
import time

import pandas as pd
import pytest

from scoring.compare import RunFrames, compare_runs

ANSWERS = 10_000
BUDGET_SECONDS = 10.0
WORDS = (
    "the client retries transient network failures up to five times with exponential backoff while permanent "
    "errors such as authentication failures surface immediately to the caller and every sync run is logged to "
    "a local audit file for later inspection by an operator who may raise the default limit through configuration"
).split()


def _sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(10, 24))).capitalize() + "."


def _reword(rng: random.Random, text: str) -> str:
    words = text.split()
    words[rng.randrange(len(words))] = rng.choice(WORDS)
    return " ".join(words)


def two_runs(answers: int = ANSWERS, *, unchanged: float = 0.80, seed: int = 7) -> tuple[list[tuple], list[tuple]]:
    """Claim records ``(question_id, index, text, [sources], label)`` of runs A and B.

    A has 1–11 claims per answer (6 on average); each cited by 0–2 passages
    from 200 sources. B keeps a claim's text with probability ``unchanged``,
    rewords one word of it otherwise (5 % of claims are dropped instead), keeps
    its citations 90 % of the time, and adds a new claim to 30 % of answers.
    """
    rng = random.Random(seed)
    a, b = [], []

    def citations() -> list[str]:
        return [f"https://docs.example.org/{rng.randrange(200)}" for _ in range(rng.choice((0, 1, 1, 2)))]

    def label(sources: list[str]) -> str | None:
        return rng.choice(("SUPPORTED", "SUPPORTED", "UNSUPPORTED", None)) if sources else "UNCITED"

    for q in range(answers):
        question = f"q{q:06d}"
        index_b = 0
        for index in range(1, rng.randint(1, 11) + 1):
            text, sources = _sentence(rng), citations()
            a.append((question, index, text, sources, label(sources)))
            draw = rng.random()
            if draw < 0.05:
                continue
            text_b = text if draw < 0.05 + unchanged else _reword(rng, text)
            sources_b = sources if rng.random() < 0.9 else citations()
            index_b += 1
            b.append((question, index_b, text_b, sources_b, label(sources_b)))
        if rng.random() < 0.3:
            index_b += 1
            b.append((question, index_b, f"A new claim about answer {q}.", [], "UNCITED"))
    return a, b


def frames(name: str, records: list[tuple], offset: int) -> RunFrames:
    """Frames of one run; every question is answered, even when all its claims were dropped."""
    claims, citations = [], []
    answer_of = {f"q{q:06d}": offset + q for q in range(ANSWERS)}
    for number, (question, index, text, sources, label) in enumerate(records, start=offset):
        answer = answer_of[question]
        claims.append((number, answer, question, index, text, len(sources), label))
        citations += [(number, str(k + 1), source) for k, source in enumerate(sources)]
    return RunFrames(
        name=name,
        claims=pd.DataFrame(claims, columns=["claim_id", "answer_id", "question_id", "claim_index", "claim",
                                             "n_citations", "label"]),
        citations=pd.DataFrame(citations, columns=["claim_id", "passage_id", "source"]),
        answers=pd.DataFrame({"answer_id": list(answer_of.values()), "question_id": list(answer_of)}),
    )


@pytest.mark.bench
@pytest.mark.parametrize("unchanged", [0.80, 0.0], ids=["realistic", "all-reworded"])
def test_compare_runs_of_ten_thousand_answers_within_budget(unchanged):
    records_a, records_b = two_runs(unchanged=unchanged)
    a, b = frames("a", records_a, 0), frames("b", records_b, 10_000_000)
    start = time.perf_counter()
    comparison = compare_runs(a, b)
    seconds = time.perf_counter() - start
    counts = comparison.counts()
    print(
        f"\ncompare_runs ({'realistic' if unchanged else 'every claim reworded'}): {len(a.claims):,} vs "
        f"{len(b.claims):,} claims over {len(comparison.shared_questions):,} questions: {seconds:.2f} s; "
        f"{counts['exact']:,} exact + {counts['fuzzy']:,} fuzzy pairs, {counts['label_flips']:,} flips, "
        f"{counts['citation_changes']:,} citation changes, {counts['added']:,} added, {counts['removed']:,} removed"
    )
    assert len(comparison.shared_questions) == ANSWERS
    assert counts["aligned"] + counts["removed"] == len(a.claims)
    assert counts["aligned"] + counts["added"] == len(b.claims)
    assert seconds <= BUDGET_SECONDS


@pytest.mark.bench
@pytest.mark.django_db
def test_run_comparison_from_the_database_within_budget(django_assert_max_num_queries, client):
    from labeling.models import Answer, Citation, Claim, Label, Passage, Question
    from labeling.tables.comparison import run_comparison
    from tests.factories import ProjectFactory, ReviewerFactory, RunFactory

    records = two_runs()
    project = ProjectFactory(slug="bench-compare")
    reviewer = ReviewerFactory(username="bench-reviewer")
    setup = time.perf_counter()
    questions = {q.question_id: q for q in Question.objects.bulk_create(
        (Question(project=project, question_id=f"q{q:06d}", text=f"Question {q}?") for q in range(ANSWERS)),
        batch_size=5000,
    )}
    runs = []
    for name, run_records in zip(("a", "b"), records, strict=True):
        run = RunFactory(project=project, name=name)
        runs.append(run)
        answers = {a.question.question_id: a for a in Answer.objects.bulk_create(
            (Answer(run=run, question=q, question_key=qid, text="…", content_hash=f"{name}{qid}".ljust(64, "0"))
             for qid, q in questions.items()), batch_size=5000)}
        sources = sorted({s for record in run_records for s in record[3]})
        passages = Passage.objects.bulk_create(
            (Passage(answer=answer, passage_id=str(k + 1), position=k, source=source, text="Passage text.")
             for answer in answers.values() for k, source in enumerate(sources[:3])), batch_size=5000)
        passage_of = {(p.answer_id, p.passage_id): p for p in passages}
        claims = Claim.objects.bulk_create(
            (Claim(answer=answers[question], index=index, text=text)
             for question, index, text, _sources, _label in run_records), batch_size=5000)
        Citation.objects.bulk_create(
            (Citation(claim=claim, passage=passage_of[(claim.answer_id, str(k % 3 + 1))], position=k,
                      cited_id=str(k % 3 + 1))
             for claim, record in zip(claims, run_records, strict=True) for k in range(len(record[3]))),
            batch_size=5000)
        Label.objects.bulk_create(
            (Label(claim=claim, reviewer=reviewer, value=record[4], claim_revision=1)
             for claim, record in zip(claims, run_records, strict=True) if record[3] and record[4]),
            batch_size=5000)
    setup = time.perf_counter() - setup

    start = time.perf_counter()
    with django_assert_max_num_queries(14):
        comparison = run_comparison(run_a=runs[0], run_b=runs[1])
    seconds = time.perf_counter() - start
    counts = comparison.result.counts()
    print(
        f"\nrun_comparison from the database: {len(records[0]):,} vs {len(records[1]):,} claims, "
        f"{ANSWERS:,} answers per run: {seconds:.2f} s (setup {setup:.0f} s); {counts['exact']:,} exact + "
        f"{counts['fuzzy']:,} fuzzy pairs, {counts['label_flips']:,} flips, {counts['citation_changes']:,} "
        f"citation changes"
    )
    assert counts["aligned"] + counts["removed"] == len(records[0])
    assert seconds <= BUDGET_SECONDS

    # The page on top: the same comparison, 200 rows per list, two scatters of 10k answers.
    project.members.add(reviewer)
    client.force_login(reviewer)
    start = time.perf_counter()
    response = client.get(f"/p/{project.slug}/compare/", {"a": "a", "b": "b", "threshold": "0.85"})
    page_seconds = time.perf_counter() - start
    print(f"comparison page for the same runs: {page_seconds:.2f} s, {len(response.content) / 2**20:.1f} MiB of HTML")
    assert response.status_code == 200
