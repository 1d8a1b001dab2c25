"""The run page's judges panel, a lead starting a judge run from it, and a judge's grading page (SPEC §4.4)."""

from __future__ import annotations

import pytest
from django.test import override_settings
from django.urls import reverse

from labeling.models import JudgeRun, Label, Membership, Reviewer, ReviewerKind, Run
from labeling.team.memberships import run_settings_set
from labeling.views import judges as judge_views
from tests.judge_server import QUESTIONS, JudgeServer

ARGS = ["judging", "judged"]


@pytest.fixture
def lead(judging_run, client):
    """``lea``, lead of the project, logged in."""
    lea = Reviewer.objects.create_user(username="lea", password="pw-for-tests-1")
    Membership.objects.create(project=judging_run.project, reviewer=lea, role="lead")
    client.force_login(lea)
    return lea


def _start(client, server, **fields):
    """Post the panel's form with the fake judge's endpoint, which the operator allows (CITELAB_JUDGE_ENDPOINTS)."""
    data = {"reviewer": "judge-a", "model": "fake", "base_url": server.base_url, "limit": ""} | fields
    with override_settings(CITELAB_JUDGE_ENDPOINTS=[server.base_url]):
        return client.post(reverse("judge_run_start", args=ARGS), data, HTTP_HX_REQUEST="true")


def test_lead_starts_a_judge_run_and_the_panel_shows_it_finished(judging_run, lead, client, settings):
    """Tasks judging_run at once (CITELAB_TASKS_SYNC): every answer valid, 12 cited claims labeled;
    the panel (htmx fragment) shows the judge, 6/6 answers and a link to its grading page."""
    settings.CITELAB_TASKS_SYNC = True
    labels = {f"{q} two.": "UNSUPPORTED" for q in QUESTIONS}
    with JudgeServer(labels=labels) as server:
        response = _start(client, server)
    body = response.content.decode()
    assert response.status_code == 200 and "<html" not in body
    judge_run = JudgeRun.objects.get()
    assert (judge_run.status, judge_run.answers_done, judge_run.claims_labeled) == ("done", 6, 12)
    assert judge_run.started_by == lead
    assert 'value="6"' in body and "6/6</span> answers" in body and "12 claims labeled" in body
    assert reverse("judge_grade", args=[*ARGS, "judge-a"]) in body
    # Finished: the panel no longer polls.
    assert 'hx-trigger="every 2s"' not in body
    assert Label.objects.filter(reviewer__username="judge-a", value="UNSUPPORTED").count() == 6


def test_an_active_judge_run_keeps_the_panel_polling_across_reloads(judging_run, lead, client):
    """A queued judge judging_run (no worker yet): the panel, fetched again as after a reload, polls every 2 s."""
    judge = Reviewer.objects.create_user(username="judge-a", kind=ReviewerKind.MODEL)
    JudgeRun.objects.create(run=judging_run, reviewer=judge, model="m", answers_total=6, answers_done=2)
    for _ in range(2):
        body = client.get(reverse("run_judges", args=ARGS), HTTP_HX_REQUEST="true").content.decode()
        assert 'hx-trigger="every 2s"' in body and 'max="6" value="2"' in body and "Queued" in body


def test_start_refuses_a_person_as_judge_and_says_why(judging_run, lead, client):
    with JudgeServer() as server:
        body = _start(client, server, reviewer="lea").content.decode()
    assert "is a human reviewer, not an automated labeler" in body
    assert JudgeRun.objects.count() == 0


def test_only_a_lead_starts_a_judge(judging_run, client):
    ann = Reviewer.objects.create_user(username="ann")
    Membership.objects.create(project=judging_run.project, reviewer=ann, role="reviewer")
    client.force_login(ann)
    with JudgeServer() as server:
        assert _start(client, server).status_code == 403
    assert JudgeRun.objects.count() == 0
    # A reviewer sees the panel (not blind here) but no start form.
    body = client.get(reverse("run_judges", args=ARGS), HTTP_HX_REQUEST="true").content.decode()
    assert "Run a judge" not in body


def test_blind_reviewer_sees_neither_the_panel_nor_the_grading_page(judging_run, client):
    run_settings_set(run=judging_run, overlap=2)
    ann = Reviewer.objects.create_user(username="ann")
    Membership.objects.create(project=judging_run.project, reviewer=ann, role="reviewer")
    Reviewer.objects.create_user(username="judge-a", kind=ReviewerKind.MODEL)
    client.force_login(ann)
    assert client.get(reverse("run_judges", args=ARGS)).status_code == 403
    assert client.get(reverse("judge_grade", args=[*ARGS, "judge-a"])).status_code == 403
    assert reverse("run_judges", args=ARGS) not in client.get(reverse("run_detail", args=ARGS)).content.decode()


def test_grading_page_shows_the_figures_and_borderline_disagreements_first(judging_run, lead, client, settings,
                                                                            monkeypatch):
    """Humans (lea): every 'one.' claim SUPPORTED, every 'two.' UNSUPPORTED (6 + 6).
    Judge: everything SUPPORTED. Confusion [[6, 0], [6, 0]]: agreement 6/12, judge
    calls nothing UNSUPPORTED (precision 0/0 → —), recall 0/6, 6 decorative
    citations let through; kappa: chance = 6·12 + 6·0 = 72, (12·6 − 72)/(144 − 72) = 0."""
    settings.CITELAB_TASKS_SYNC = True
    for claim in judging_run.answers.values_list("claims__pk", "claims__text"):
        if claim[1].endswith("one."):
            Label.objects.create(claim_id=claim[0], reviewer=lead, value="SUPPORTED", claim_revision=1)
        elif claim[1].endswith("two."):
            Label.objects.create(claim_id=claim[0], reviewer=lead, value="UNSUPPORTED", claim_revision=1,
                                 justification="Only partially backed by P2." if "valid" in claim[1] else "No.")
    with JudgeServer() as server:
        _start(client, server)
    response = client.get(reverse("judge_grade", args=[*ARGS, "judge-a"]))
    body = response.content.decode()
    grade = response.context["grade"]
    assert (grade.n, grade.agreement.numerator, grade.kappa, grade.missed_unsupported) == (12, 6, 0.0, 6)
    assert "0/6 = 0.00" in body and "0/0 = —" in body
    rows = response.context["page"].object_list
    assert rows[0]["claim"] == "valid two." and rows[0]["borderline"] == ["partial support"]
    assert '<span class="badge borderline">partial support</span>' in body
    assert "fake" in body and response.context["judge_runs"][0].prompt_sha256[:12] in body
    # A page reads its own rows of the grade: with 4 a page, page 2 holds the last 2 of the 6.
    monkeypatch.setattr(judge_views, "DISAGREEMENTS_PER_PAGE", 4)
    second = client.get(reverse("judge_grade", args=[*ARGS, "judge-a"]) + "?page=2").context["page"]
    everything = grade.to_dict()["disagreements"]
    assert (second.paginator.count, second.paginator.num_pages, len(everything)) == (6, 2, 6)
    # The page adds where each claim is (its answer and question).
    assert [{k: v for k, v in row.items() if k not in ("answer_id", "question_id")}
            for row in second.object_list] == everything[4:]
    assert all(row["question_id"] for row in second.object_list)
    assert [row["claim_id"] for row in everything] == grade.disagreements["claim_id"].tolist()


@pytest.mark.parametrize("judges", [5, 500])
def test_judges_panel_query_budget(judging_run, lead, client, django_assert_max_num_queries, judges):
    made = Reviewer.objects.bulk_create([Reviewer(username=f"judge-{i:03d}", kind=ReviewerKind.MODEL)
                                         for i in range(judges)])
    JudgeRun.objects.bulk_create([JudgeRun(run=judging_run, reviewer=r, model="m", answers_total=6, status="done",
                                           answers_done=6) for r in made])
    # session, user, judging_run with project and role (3); judge runs with their reviewers (1); label counts (1).
    with django_assert_max_num_queries(5):
        response = client.get(reverse("run_judges", args=ARGS), HTTP_HX_REQUEST="true")
    assert response.content.decode().count('class="progress-bar judge-progress"') == judges


def test_run_page_loads_the_judges_panel_lazily(judging_run, lead, client):
    body = client.get(reverse("run_detail", args=ARGS)).content.decode()
    assert f'hx-get="{reverse("run_judges", args=ARGS)}" hx-trigger="load"' in body


def test_unknown_judge_is_a_404(judging_run, lead, client):
    assert client.get(reverse("judge_grade", args=[*ARGS, "nobody"])).status_code == 404
    assert Run.objects.count() == 1


def test_the_servers_key_goes_only_to_the_configured_endpoint(judging_run, lead, client, settings, monkeypatch):
    """A lead typing another endpoint gets no key sent there; the configured endpoint
    (CITELAB_OPENAI_BASE_URL) gets it."""
    settings.CITELAB_TASKS_SYNC = True
    monkeypatch.setenv("CITELAB_OPENAI_API_KEY", "sk-server-key")
    with JudgeServer() as server:
        _start(client, server, limit="1")
        assert {r["authorization"] for r in server.requests} == {"Bearer no-key"}
        monkeypatch.setenv("CITELAB_OPENAI_BASE_URL", server.base_url)
        _start(client, server, limit="1", reviewer="judge-b")
        assert server.requests[-1]["authorization"] == "Bearer sk-server-key"
    assert "sk-server-key" not in client.get(reverse("run_judges", args=ARGS)).content.decode()
