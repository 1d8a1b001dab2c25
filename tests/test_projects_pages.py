"""Project list, project page (runs with progress, coverage, support, gap) and
run page (answers with counts, status, filters, pages of 50): figures checked
against the real ExpertQA labels and hand-counted fixtures, and query budgets
with 5 and 500 rows."""

from __future__ import annotations

import pytest
from django.test import RequestFactory
from django.urls import reverse

from labeling.models import Answer, Citation, Claim, Label, Passage, Question, Run
from labeling.review import tallies
from labeling.runs import labels_changed, project_labels_changed
from labeling.scores.metrics import run_scores
from labeling.team.quality import run_page_counts
from labeling.views.projects import project_for, run_for
from tests.counted_run import counted_run
from tests.factories import (
    AnswerFactory,
    CitationFactory,
    ClaimFactory,
    LabelFactory,
    PassageFactory,
    ProjectFactory,
    QuestionFactory,
    ReviewerFactory,
    RunFactory,
)

pytestmark = pytest.mark.django_db

# fixtures/README.md, "Figures computed from the human labels".
EXPERTQA = {
    "post_hoc_gs_gpt4": (30, 181, 177, 175, 133),
    "post_hoc_sphere_gpt4": (30, 180, 180, 171, 92),
    "rr_gs_gpt4": (29, 162, 123, 123, 110),
    "rr_sphere_gpt4": (29, 212, 159, 150, 113),
}


def bulk_run(project, name, *, answers, reviewer=None):
    """A run of ``answers`` answers, each with 3 claims: claim 1 cited and
    labeled SUPPORTED by ``reviewer`` (if given), claim 2 cited and unlabeled,
    claim 3 uncited. Built with bulk_create so 500 rows stay fast."""
    run = Run.objects.create(project=project, name=name)
    questions = Question.objects.bulk_create(
        [Question(project=project, question_id=f"{name}-q{i:04d}", text=f"Question {i}?") for i in range(answers)])
    rows = Answer.objects.bulk_create(
        [Answer(run=run, question=q, question_key=q.question_id, text="One. Two. Three.", content_hash=f"{i:064x}")
         for i, q in enumerate(questions)])
    passages = Passage.objects.bulk_create([Passage(answer=a, passage_id="P1", position=0) for a in rows])
    claims = Claim.objects.bulk_create(
        [Claim(answer=a, index=k, text=text) for a in rows for k, text in enumerate(["One.", "Two.", "Three."], 1)])
    Citation.objects.bulk_create(
        [Citation(claim=c, passage=passages[i // 3], position=0, cited_id="P1")
         for i, c in enumerate(claims) if c.index < 3])
    if reviewer is not None:
        Label.objects.bulk_create([Label(claim=c, reviewer=reviewer, value="SUPPORTED", claim_revision=1)
                                   for c in claims if c.index == 1])
    return run


# -- project list ----------------------------------------------------------------------------------

def test_project_list_shows_only_my_projects_with_counts(client, reviewer):
    mine = ProjectFactory(slug="mine", name="Mine")
    mine.members.add(reviewer)
    RunFactory(project=mine, name="a")
    RunFactory(project=mine, name="b")
    QuestionFactory(project=mine)
    ProjectFactory(slug="theirs", name="Theirs")
    client.force_login(reviewer)

    html = client.get(reverse("project_list")).content.decode()

    assert "Mine" in html and "Theirs" not in html
    assert "2 runs · 1 question" in html


def test_project_list_without_projects_says_what_to_do(client, reviewer):
    client.force_login(reviewer)

    assert "You are not a member of any project yet" in client.get(reverse("project_list")).content.decode()


# -- project page ----------------------------------------------------------------------------------

def test_project_page_figures_match_the_expertqa_labels(client, reviewer, expertqa_project):
    expertqa_project.members.add(reviewer)
    client.force_login(reviewer)

    response = client.get(expertqa_project.get_absolute_url())

    rows = {row.run.name: row for row in response.context["rows"]}
    for name, (answers, claims, cited, labeled_cited, supported) in EXPERTQA.items():
        counts = rows[name].counts
        assert (rows[name].answers, counts.claims, counts.cited) == (answers, claims, cited)
        assert counts.supported + counts.unsupported == labeled_cited
        assert counts.supported == supported
        assert counts.labeled == 0  # alice has labeled nothing yet
    html = response.content.decode()
    # post_hoc_gs_gpt4: coverage 177/181, support 133/175, gap 0.9779 − 0.7600 = 0.22; 2 cited claims pending.
    assert "177/181 = 0.98" in html and "133/175 = 0.76" in html and "0.22" in html
    assert "2 pending" in html
    assert '<span class="metric">0/177</span>' in html


def test_project_page_agrees_with_run_scores(reviewer, expertqa_project):
    """The page's aggregate queries and the scoring library count the same claims."""
    bob = ReviewerFactory(username="bob")
    run = Run.objects.get(project=expertqa_project, name="rr_gs_gpt4")
    claims = list(Claim.objects.filter(answer__run=run, citations__isnull=False).distinct().order_by("id")[:6])
    for claim in claims[:3]:  # bob agrees with the expert on three claims…
        value = Label.objects.get(claim=claim, is_current=True).value
        LabelFactory(claim=claim, reviewer=bob, value=value)
    for claim in claims[3:]:  # …and disagrees on three: those become pending.
        value = Label.objects.get(claim=claim, is_current=True).value
        LabelFactory(claim=claim, reviewer=bob, value="UNSUPPORTED" if value == "SUPPORTED" else "SUPPORTED")

    rows = {row.run.name: row.counts for row in tallies.run_rows(project=expertqa_project, reviewer=bob)}

    for name, counts in rows.items():
        scores = run_scores(Run.objects.get(project=expertqa_project, name=name)).to_dict()["claims"]
        assert (counts.claims, counts.cited, counts.supported, counts.unsupported, counts.pending) == (
            scores["claims"], scores["cited"], scores["supported"], scores["unsupported"], scores["pending"])
        assert counts.coverage.value == scores["coverage"]
        assert counts.support.value == scores["support"]
    assert rows["rr_gs_gpt4"].disagreements == 3
    assert rows["rr_gs_gpt4"].labeled == 6


def test_abstaining_answers_leave_the_claim_count(reviewer):
    """SPEC §4.2: an answer to an unanswerable question that cites nothing has no factual claims."""
    project = ProjectFactory(slug="abst")
    run = RunFactory(project=project, name="r")
    abstaining = AnswerFactory(run=run, question=QuestionFactory(project=project, answerable=False))
    ClaimFactory(answer=abstaining, index=1, text="Not found in the documents.")
    answered = AnswerFactory(run=run, question=QuestionFactory(project=project))
    cited = ClaimFactory(answer=answered, index=1)
    CitationFactory(claim=cited)
    ClaimFactory(answer=answered, index=2)

    counts = tallies.run_counts(run=run, reviewer=reviewer)

    assert (counts.claims, counts.cited) == (2, 1)
    assert str(counts.coverage) == "1/2 = 0.50"
    assert run_scores(run).to_dict()["claims"]["claims"] == 2


def test_undefined_ratios_show_a_dash(client, reviewer):
    project = ProjectFactory(slug="empty")
    project.members.add(reviewer)
    RunFactory(project=project, name="nothing-yet")
    client.force_login(reviewer)

    html = client.get(project.get_absolute_url()).content.decode()

    assert "0/0 = —" in html
    assert '<td class="num metric" data-label="Gap">—</td>' in html


@pytest.mark.parametrize("runs", [5, 500])
def test_project_page_query_budget(client, reviewer, django_assert_max_num_queries, runs):
    project = ProjectFactory(slug="many")
    project.members.add(reviewer)
    question = QuestionFactory(project=project)
    created = Run.objects.bulk_create([Run(project=project, name=f"run-{i:03d}") for i in range(runs)])
    answers = Answer.objects.bulk_create(
        [Answer(run=r, question=question, question_key=question.question_id, text="x", content_hash="0")
         for r in created])
    Claim.objects.bulk_create([Claim(answer=a, index=1, text="c") for a in answers])
    client.force_login(reviewer)

    # 1 session, 1 user, 1 project (membership checked in the same query), 1 runs with answer counts,
    # grouped by run: 1 claims, 1 citations, 1 current labels, 1 adjudicated claims (one more only when
    # unanswerable questions exist), 1 the runs' rows again before their counts are kept.
    with django_assert_max_num_queries(9):
        response = client.get(project.get_absolute_url())
    assert len(response.context["rows"]) == runs


# -- run page --------------------------------------------------------------------------------------

@pytest.fixture
def page_run(reviewer):
    """Run ``r`` of project ``p``: q1 done by alice, q2 half done and disputed by bob, q3 not started with a
    fabricated citation, q4 without citations."""
    project = ProjectFactory(slug="p")
    project.members.add(reviewer)
    bob = ReviewerFactory(username="bob")
    run = RunFactory(project=project, name="r")
    answers = {qid: AnswerFactory(run=run, question=QuestionFactory(project=project, question_id=qid))
               for qid in ["q1", "q2", "q3", "q4"]}
    claims = {}
    for qid, n in [("q1", 2), ("q2", 2), ("q3", 2), ("q4", 1)]:
        passage = PassageFactory(answer=answers[qid]) if qid != "q4" else None
        for index in range(1, n + 1):
            claim = claims[qid, index] = ClaimFactory(answer=answers[qid], index=index)
            if passage is not None:
                CitationFactory(claim=claim, passage=passage)
    CitationFactory(claim=claims["q3", 2], passage=None, cited_id="P404", fabricated=True)
    LabelFactory(claim=claims["q1", 1], reviewer=reviewer, value="SUPPORTED")
    LabelFactory(claim=claims["q1", 2], reviewer=reviewer, value="UNSUPPORTED", justification="partial")
    LabelFactory(claim=claims["q2", 1], reviewer=reviewer, value="SUPPORTED")
    LabelFactory(claim=claims["q2", 1], reviewer=bob, value="UNSUPPORTED", justification="no")
    return run


def test_run_page_lists_answers_with_counts_and_status(client, reviewer, page_run):
    client.force_login(reviewer)

    response = client.get(page_run.get_absolute_url())

    rows = [(r.answer.question.question_id, r.counts.claims, r.counts.cited, r.counts.labeled, r.counts.status,
             str(r.counts.coverage), str(r.counts.support), r.counts.fabricated)
            for r in response.context["answers"].rows]
    assert rows == [
        ("q1", 2, 2, 2, "done", "2/2 = 1.00", "1/2 = 0.50", 0),
        ("q2", 2, 2, 1, "has disagreement", "2/2 = 1.00", "0/0 = —", 0),
        ("q3", 2, 2, 0, "not started", "2/2 = 1.00", "0/0 = —", 1),
        ("q4", 1, 0, 0, "done", "0/1 = 0.00", "0/0 = —", 0),
    ]
    counts = response.context["counts"]
    # 7 claims, 6 cited; agreed labels: q1's SUPPORTED and UNSUPPORTED; q2 claim 1 disputed → pending.
    assert (counts.claims, counts.cited, counts.labeled, counts.supported, counts.unsupported, counts.pending,
            counts.disagreements) == (7, 6, 3, 1, 1, 4, 1)
    html = response.content.decode()
    assert "6/7 = 0.86" in html and "1/2 = 0.50" in html
    assert "provisional: 4 cited claims pending (1 of them disputed)" in html
    assert 'href="/p/p/runs/r/next/"' in html and "Start labeling" in html
    assert 'id="answer-' in html  # anchors other pages link to


@pytest.mark.parametrize(
    ("answer_filter", "expected"),
    [("", ["q1", "q2", "q3", "q4"]), ("unlabeled", ["q2", "q3"]), ("unsupported", ["q1", "q2"]),
     ("fabricated", ["q3"])],
)
def test_run_page_filters(client, reviewer, page_run, answer_filter, expected):
    client.force_login(reviewer)

    response = client.get(page_run.get_absolute_url(), {"filter": answer_filter})

    assert [r.answer.question.question_id for r in response.context["answers"].rows] == expected


def test_unknown_filter_shows_every_answer(client, reviewer, page_run):
    client.force_login(reviewer)

    response = client.get(page_run.get_absolute_url(), {"filter": "<script>"})

    assert len(response.context["answers"].rows) == 4
    assert "<script>" not in response.content.decode()


def test_run_page_pages_by_50(client, reviewer):
    project = ProjectFactory(slug="paged")
    project.members.add(reviewer)
    run = bulk_run(project, "r", answers=120)
    client.force_login(reviewer)

    first = client.get(run.get_absolute_url())
    last = client.get(run.get_absolute_url(), {"page": 3})
    beyond = client.get(run.get_absolute_url(), {"page": 99})

    assert [r.answer.question.question_id for r in first.context["answers"].rows][:2] == ["r-q0000", "r-q0001"]
    assert len(first.context["answers"].rows) == 50
    assert [r.answer.question.question_id for r in last.context["answers"].rows][-1] == "r-q0119"
    assert len(last.context["answers"].rows) == 20
    assert beyond.context["answers"].page.number == 3
    assert "Page 1 of 3" in first.content.decode()


@pytest.mark.parametrize("answers", [5, 500])
@pytest.mark.parametrize("answer_filter", ["", "unlabeled"])
def test_run_page_query_budget(client, reviewer, django_assert_max_num_queries, answers, answer_filter):
    project = ProjectFactory(slug="budget")
    project.members.add(reviewer)
    run = bulk_run(project, "r", answers=answers, reviewer=reviewer)
    client.force_login(reviewer)

    # 1 session, 1 user, 1 run with its project (membership in the same query), answer page: 1 count,
    # 1 ids of the page, 1 rows with their counts, 1 their adjudicated claims; run counts: 1 claims,
    # 1 citations, 1 current labels, 1 adjudicated claims; the coverage × support scatter
    # (labeling.scores.charts.run_scatter): 1 claims version, 1 answers, 1 questions with gold, 1 claims,
    # 1 claims not factual, 3 label state, labels and their reviewers, 1 adjudications; 1 EXISTS: does any question of
    # the run have gold (none here); 1 EXISTS: may the user rename or delete the run
    # (permissions.run_manage_allowed); with a filter, 1 count of the run's answers (is the run small
    # enough for its totals inline?); the reviewers section (labeling.team.assignments.run_reviewers):
    # 1 claim totals, 1 labels per reviewer, 1 members;
    # 1 EXISTS: has any citation of the run a judgment (labeling.scores.metrics.run_judgments; none here);
    # 1: open send-backs and gold claims (labeling.team.quality.run_page_counts, SPEC §4.4); 1: the run's
    # row again before its claim counts are kept (kept_counts.claim_counts_by_run).
    with django_assert_max_num_queries(28 if answer_filter else 27):
        response = client.get(run.get_absolute_url(), {"filter": answer_filter})
    counts = response.context["counts"]
    assert (counts.claims, counts.cited, counts.labeled, counts.supported) == (3 * answers, 2 * answers, answers,
                                                                               answers)
    assert len(response.context["answers"].rows) == min(answers, 50)


def test_large_run_loads_its_totals_and_scatter_lazily(client, reviewer, django_assert_max_num_queries):
    project = ProjectFactory(slug="large")
    project.members.add(reviewer)
    run = bulk_run(project, "r", answers=1_001, reviewer=reviewer)  # over the 1,000 answers shown inline
    client.force_login(reviewer)
    scatter_url = reverse("run_scatter", kwargs={"project_slug": "large", "run_name": "r"})
    summary_url = reverse("run_summary", kwargs={"project_slug": "large", "run_name": "r"})

    # Without the run totals' 4 queries and the scatter's 5: 1 session, 1 user, 1 run with its project,
    # 4 answer page, 1 EXISTS for gold, 1 EXISTS for rename/delete (permissions.run_manage_allowed).
    with django_assert_max_num_queries(9):
        html = client.get(run.get_absolute_url()).content.decode()
    fragment = client.get(scatter_url, HTTP_HX_REQUEST="true").content.decode()
    page = client.get(scatter_url).content.decode()
    totals = client.get(summary_url, HTTP_HX_REQUEST="true").content.decode()
    totals_page = client.get(summary_url).content.decode()

    assert 'class="chart scatter"' not in html
    assert f'hx-get="{scatter_url}" hx-trigger="revealed"' in html
    assert 'class="chart scatter"' in fragment and "<html" not in fragment
    assert 'class="chart scatter"' in page and "<html" in page
    assert f'hx-get="{summary_url}" hx-trigger="load"' in html
    assert f'<a href="{summary_url}">open the totals</a>' in html
    # 3,003 claims, 2,002 cited, the reviewer labeled one cited claim per answer.
    assert "<html" not in totals and '<span class="metric">1001/2002</span>' in totals
    assert '<p class="stat-value metric">2002/3003 = 0.67</p>' in totals
    assert "<html" in totals_page and '<span class="metric">1001/2002</span>' in totals_page
    # The button waits for the totals too: still work to do here.
    assert '<span id="start-labeling" hx-swap-oob="true"><a class="button primary"' in totals
    Label.objects.bulk_create([Label(claim=c, reviewer=reviewer, value="SUPPORTED", claim_revision=1)
                               for c in Claim.objects.filter(answer__run=run, index=2)])
    labels_changed(run=run)  # as every writer of labels says (the totals are kept per label state)
    done = client.get(summary_url, HTTP_HX_REQUEST="true").content.decode()
    assert '<span class="badge SUPPORTED">all cited claims labeled by you</span>' in done


def test_run_page_shows_gold_metrics_with_fractions_and_switches_match_method(client, reviewer):
    """Seed 'RAG Citation Quality' run: context 2/5 (one match in (a), none in (b), one of
    three in (c)), sources 4/5; per-answer mean context precision (1 + 0 + 1/3)/3 = 0.44."""
    from labeling.importers.load import run_import
    from tests.conftest import FIXTURES_DIR

    project = ProjectFactory(slug="gold")
    project.members.add(reviewer)
    run_import(project=project, source=FIXTURES_DIR / "seed_gold_references.jsonl")
    client.force_login(reviewer)
    url = reverse("run_detail", kwargs={"project_slug": "gold", "run_name": "seed-gold-references"})
    html = client.get(url).content.decode()
    assert "Against gold" in html
    rows = {(r.group, r.metric): r for r in client.get(url).context["gold"]["rows"]}
    assert str(rows[("Passages (context)", "precision")].fraction) == "2/5 = 0.40"
    assert str(rows[("Sources", "recall")].fraction) == "4/5 = 0.80"
    assert round(rows[("Passages (context)", "precision")].mean, 2) == 0.44
    gold_url = reverse("run_gold", kwargs={"project_slug": "gold", "run_name": "seed-gold-references"})
    fragment = client.get(gold_url, {"match": "substring"}, HTTP_HX_REQUEST="true")
    assert "<html" not in fragment.content.decode()
    assert fragment.context["gold"]["method"] == "substring"
    assert "2/5 = 0.40" in fragment.content.decode()


def test_run_without_gold_has_no_gold_panel(client, reviewer):
    project = ProjectFactory(slug="nogold")
    project.members.add(reviewer)
    run = bulk_run(project, "r", answers=3)
    client.force_login(reviewer)
    assert "Against gold" not in client.get(run.get_absolute_url()).content.decode()


@pytest.mark.parametrize("answers", [5, 500])
def test_run_page_with_gold_keeps_a_constant_query_budget(client, reviewer, django_assert_max_num_queries, answers):
    """Every question has one gold id, reference and expected source: passage P1 of doc.md.
    Each answer cites P1 from claims 1 and 2 (deduplicated), so ids precision = recall = 1."""
    from labeling.models import ExpectedSource, GoldPassageId, GoldReference

    project = ProjectFactory(slug="goldbudget")
    project.members.add(reviewer)
    run = bulk_run(project, "r", answers=answers, reviewer=reviewer)
    Question.objects.filter(project=project).update(gold_ids_given=True, gold_references_given=True,
                                                    gold_sources_given=True)
    Passage.objects.filter(answer__run=run).update(source="doc.md", text="the passage")
    questions = list(Question.objects.filter(project=project))
    GoldPassageId.objects.bulk_create([GoldPassageId(question=q, passage_id="P1") for q in questions])
    GoldReference.objects.bulk_create([GoldReference(question=q, position=0, source="doc.md", text="the passage")
                                       for q in questions])
    ExpectedSource.objects.bulk_create([ExpectedSource(question=q, source="doc.md") for q in questions])
    client.force_login(reviewer)

    # The 25 of test_run_page_query_budget less the scatter's 9 (it reuses the gold panel's claim metrics),
    # plus the gold panel (labeling.scores.metrics.run_scores): 1 claims version, 2 answers (answers,
    # questions with gold), 2 claims (claims, those not factual), 3 label state, labels and their reviewers,
    # 1 adjudications, 1 citations, 1 gold ids, 1 references, 1 expected sources;
    # 1 EXISTS for citation judgments (none here); 1 open send-backs and gold claims (SPEC §4.4); 1 the
    # run's row again before its claim counts are kept.
    with django_assert_max_num_queries(32):
        response = client.get(run.get_absolute_url())
    rows = {(r.group, r.metric): r for r in response.context["gold"]["rows"]}
    assert str(rows[("Cited ids vs gold ids", "precision")].fraction) == f"{answers}/{answers} = 1.00"
    assert str(rows[("Passages (context)", "recall")].fraction) == f"{answers}/{answers} = 1.00"


def test_project_and_run_reads_query_counts(django_assert_num_queries):
    """tests/counted_run.py's project: one run of three answers (nine claims, six cited), q03's
    question unanswerable."""
    world = counted_run()
    request = RequestFactory().get("/")
    request.user = world.rev1
    # The project with the user's role.
    with django_assert_num_queries(1):
        assert project_for(request, "counts").my_role == "reviewer"
    # The run with its project, the user's role and whether they are assigned.
    with django_assert_num_queries(1):
        assert run_for(request, "counts", "r1").may_label
    with django_assert_num_queries(1):
        assert [(p.slug, p.n_runs, p.n_questions) for p in tallies.project_rows(user=world.rev1)] == [
            ("counts", 1, 3)]
    # Open send-backs (all, the viewer's) and gold claims in one statement.
    with django_assert_num_queries(1):
        assert run_page_counts(run=world.run, reviewer=world.rev1) == (0, 0, 0)


def test_run_counts_query_counts(django_assert_num_queries):
    world = counted_run()
    # The runs with their answer counts, then four grouped counts (claims, citations, labels,
    # adjudicated claims) and a fifth for the abstaining answers, as q03's question is unanswerable,
    # and the runs' rows again before the counts are kept under them.
    with django_assert_num_queries(7):
        (row,) = tallies.run_rows(project=world.project, reviewer=world.lead)
    assert (row.answers, row.counts.claims, row.counts.cited) == (3, 9, 6)
    # Counted once per label state: the run page's counts are those, after reading the run's state
    # (the run here is not loaded with it, as run_for loads it).
    with django_assert_num_queries(1):
        assert tallies.run_answer_counts(run=world.run, reviewer=world.lead) == row.answer_counts
    Question.objects.update(answerable=None)
    project_labels_changed(project=world.project)  # as the import that changes a question's answerability
    # The runs, the stamps since the kept counts (this one names no claim: counted whole), four counts,
    # the rows again.
    with django_assert_num_queries(7):
        tallies.run_rows(project=world.project, reviewer=world.lead)
    # The counts hold the reviewer's own progress: another reviewer's are counted for them (state, four,
    # the row again).
    with django_assert_num_queries(6):
        assert len(tallies.run_answer_counts(run=world.run, reviewer=world.rev1)) == 3
    with django_assert_num_queries(1):
        tallies.run_answer_counts(run=world.run, reviewer=world.rev1)
