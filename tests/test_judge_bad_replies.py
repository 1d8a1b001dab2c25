"""A judge's bad replies fail their own answer only, and a lead cannot use the
judge form to probe the server's network (SPEC §7, item 4).

The fake judge (tests/judge_server.py) scripts each answer of the
``judging_run`` fixture: six answers, each with two cited claims ("<q> one."
and "<q> two."), 12 cited claims in all.
"""

from __future__ import annotations

import socket
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.test import override_settings
from django.urls import reverse

from labeling.judges.protocol import JudgeEndpoint
from labeling.judges.runs import BROWSER_REQUEST_FAILED, judge_run_create, judge_run_execute
from labeling.models import JudgeRun, Label, Membership, Reviewer
from labeling.names import text_problem
from tests.judge_server import QUESTIONS, JudgeServer

ARGS = ["judging", "judged"]

# One bad reply per answer; "valid" and "timeout" carry a bad reason in their first verdict.
BAD = {"valid": "surrogate_reason", "missing": "html", "unknown": "not_json", "prose": "deep",
       "rate limited": "deep_body", "timeout": "nul_reason"}


@pytest.fixture
def lead(judging_run, client):
    """``lea``, lead of the project, logged in."""
    lea = Reviewer.objects.create_user(username="lea", password="pw-for-tests-1")
    Membership.objects.create(project=judging_run.project, reviewer=lea, role="lead")
    client.force_login(lea)
    return lea


def _labels(name: str = "judge-a") -> dict[str, str]:
    return dict(Label.objects.filter(reviewer__username=name, is_current=True)
                .values_list("claim__text", "justification"))


def _closed_port_url() -> str:
    """A loopback URL where nothing listens (the port was free a moment ago)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def test_each_bad_reply_fails_only_its_answer_and_says_why(judging_run):
    """html, not_json, deep (nested message) and deep_body (nested HTTP body): 4
    answers failed, nothing written for them. surrogate_reason and nul_reason:
    the first claim's reason cannot be stored (a justification's text rule), so
    that verdict is malformed and the second claim is labeled: 2 answers done,
    2 claims labeled, 2 malformed. All 6 answers were asked; each of the 6
    problems is kept on the judge run."""
    with JudgeServer(behaviours=BAD) as server:
        judge_run = judge_run_create(run=judging_run, reviewer_name="judge-a",
                                     endpoint=JudgeEndpoint(model="m", base_url=server.base_url, max_retries=0))
        judge_run = judge_run_execute(judge_run.pk, api_key="k")
    asked = sorted(request["body"]["messages"][-1]["content"] for request in server.requests)
    assert len(asked) == 6
    assert (judge_run.status, judge_run.answers_total, judge_run.answers_done, judge_run.answers_failed) == (
        "done", 6, 2, 4)
    assert (judge_run.claims_labeled, judge_run.claims_malformed) == (2, 1 + 1)
    assert _labels() == {"valid two.": "judged SUPPORTED: valid two.",
                         "timeout two.": "judged SUPPORTED: timeout two."}
    problems = judge_run.details["problems"]
    assert len(problems) == 6
    by_question = {problem.split(":")[0].split(",")[0]: problem for problem in problems}
    assert by_question["question missing"] == (
        "question missing: the reply is not JSON but a page of text (it begins "
        "'<html><body><h1>502 Bad Gateway</h1></body></html>')")
    assert by_question["question unknown"] == f"question unknown: the reply from {server.base_url} is not JSON"
    assert by_question["question prose"] == "question prose: the reply is JSON nested too deep to read"
    assert by_question["question rate-limited"] == (
        f"question rate-limited: the reply from {server.base_url} is JSON nested too deep to read")
    claim_ids = dict(judging_run.answers.values_list("claims__text", "claims__pk"))
    assert by_question["question valid"] == (
        f"question valid, claim {claim_ids['valid one.']}: the reason contains a lone surrogate U+D800 at "
        "character 7 (not a character): fix the file's encoding")
    assert by_question["question timeout"] == (
        f"question timeout, claim {claim_ids['timeout one.']}: the reason contains the control character U+0000 "
        "at character 7, which cannot be stored: remove it")
    # The last failed answer in question_id order (missing, prose, rate-limited, timeout, unknown, valid).
    assert judge_run.error == by_question["question unknown"]


def test_a_reason_with_a_control_character_is_not_stored(judging_run):
    """control_reason: the first verdict's reason holds ESC (U+001B), which no
    justification may hold (it would break the XLSX export and the CSV round
    trip): "valid one." stays unlabeled by the judge, "valid two." is labeled;
    the other 5 answers are valid: 1 + 10 = 11 claims labeled, 1 malformed."""
    with JudgeServer(behaviours={"valid": "control_reason"}) as server:
        judge_run = judge_run_create(run=judging_run, reviewer_name="judge-a",
                                     endpoint=JudgeEndpoint(model="m", base_url=server.base_url, max_retries=0))
        judge_run = judge_run_execute(judge_run.pk, api_key="k")
    assert (judge_run.answers_done, judge_run.claims_labeled, judge_run.claims_malformed) == (6, 11, 1)
    labels = _labels()
    assert "valid one." not in labels and len(labels) == 11
    assert all(text_problem(justification) == "" for justification in labels.values())


def test_autolabel_reports_the_failed_answers_and_goes_on(judging_run):
    """The command, with the same script: exit 0 (2 answers judged), the report lists the 6 problems."""
    out = StringIO()
    with JudgeServer(behaviours=BAD) as server:
        call_command("autolabel", "--run", "judged", "--reviewer", "judge-a", "--model", "m",
                     "--base-url", server.base_url, "--max-retries", "0", stdout=out)
    report = out.getvalue()
    assert "answers: 2 judged, 4 failed (nothing written for them), of 6" in report
    assert "  problems (6):" in report
    assert "    question missing: the reply is not JSON but a page of text" in report


def test_synchronous_browser_run_with_bad_replies_answers_200(judging_run, lead, client, settings):
    """Started from the panel with the task run in the request (CITELAB_TASKS_SYNC):
    the bad replies give no 500; the panel shows the judge run done, 2/6
    answers judged and 4 failed, and the grading page lists the 6 problems."""
    settings.CITELAB_TASKS_SYNC = True
    with JudgeServer(behaviours=BAD) as server:
        settings.CITELAB_JUDGE_ENDPOINTS = [server.base_url]
        response = client.post(reverse("judge_run_start", args=ARGS), {
            "reviewer": "judge-a", "model": "m", "base_url": server.base_url, "limit": ""}, HTTP_HX_REQUEST="true")
    body = response.content.decode()
    assert response.status_code == 200
    assert "6/6</span> answers, 4 failed" in body and "2 claims labeled" in body
    grading = client.get(reverse("judge_grade", args=[*ARGS, "judge-a"])).content.decode()
    assert "6 problems" in grading and "the reply is JSON nested too deep to read" in grading


@pytest.mark.parametrize("limit", ["99999999999999999999", "2147483648", "0"])
def test_an_answer_limit_out_of_range_is_refused_in_the_form(judging_run, lead, client, limit):
    """Above 2**31 − 1 (what the column holds) or below 1: the form says so, nothing is recorded."""
    with JudgeServer() as server, override_settings(CITELAB_JUDGE_ENDPOINTS=[server.base_url]):
        response = client.post(reverse("judge_run_start", args=ARGS), {
            "reviewer": "judge-a", "model": "m", "base_url": server.base_url, "limit": limit},
            HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    assert f"the answer limit must be a whole number from 1 to 2,147,483,647, not {int(limit):,}" in (
        response.content.decode())
    assert JudgeRun.objects.count() == 0 and server.requests == []


def test_an_answer_limit_out_of_range_is_refused_by_autolabel(judging_run):
    with pytest.raises(CommandError, match="the answer limit must be a whole number from 1 to 2,147,483,647"):
        call_command("autolabel", "--run", "judged", "--reviewer", "judge-a", "--model", "m",
                     "--base-url", "http://127.0.0.1:9/v1", "--limit", "99999999999999999999")
    assert JudgeRun.objects.count() == 0


def test_a_lead_may_type_only_an_allowed_endpoint(judging_run, lead, client, settings, monkeypatch):
    """With CITELAB_OPENAI_BASE_URL unset and CITELAB_JUDGE_ENDPOINTS naming the fake
    judge: an internal address typed in the form is refused before any request
    (nothing recorded); the allowed one (with or without a trailing /) runs."""
    settings.CITELAB_TASKS_SYNC = True
    monkeypatch.delenv("CITELAB_OPENAI_BASE_URL", raising=False)
    with JudgeServer() as server:
        settings.CITELAB_JUDGE_ENDPOINTS = [server.base_url]
        refused = client.post(reverse("judge_run_start", args=ARGS), {
            "reviewer": "judge-a", "model": "m", "base_url": "http://127.0.0.1:5432/v1", "limit": "1"},
            HTTP_HX_REQUEST="true").content.decode()
        assert "is not one a lead may choose here" in refused and "CITELAB_JUDGE_ENDPOINTS" in refused
        assert JudgeRun.objects.count() == 0
        client.post(reverse("judge_run_start", args=ARGS), {
            "reviewer": "judge-a", "model": "m", "base_url": server.base_url + "/", "limit": "1"},
            HTTP_HX_REQUEST="true")
    assert JudgeRun.objects.get().claims_labeled == 2 and len(server.requests) == 1
    # The panel offers the allowed endpoint.
    panel = client.get(reverse("run_judges", args=ARGS), HTTP_HX_REQUEST="true").content.decode()
    assert f'<option value="{server.base_url}">' in panel


def test_the_operators_command_may_ask_any_endpoint(judging_run, settings):
    """autolabel --base-url is not limited by CITELAB_JUDGE_ENDPOINTS (empty here)."""
    settings.CITELAB_JUDGE_ENDPOINTS = []
    with JudgeServer() as server:
        call_command("autolabel", "--run", "judged", "--reviewer", "judge-a", "--model", "m",
                     "--base-url", server.base_url, "--limit", "1", stdout=StringIO())
    assert JudgeRun.objects.get().claims_labeled == 2


def test_every_failed_request_in_the_browser_reads_the_same(judging_run, lead, client, settings):
    """A lead's judge run against a closed port ("could not connect") and one
    against a host that answers 404: the recorded error is one sentence for
    both, so the form tells nothing about the server's network. The command
    line keeps the specific reason."""
    settings.CITELAB_TASKS_SYNC = True
    closed = _closed_port_url()
    errors = {}
    with JudgeServer(behaviours={q: "not_found" for q in QUESTIONS}) as server:
        settings.CITELAB_JUDGE_ENDPOINTS = [closed, server.base_url]
        for name, url in (("judge-closed", closed), ("judge-404", server.base_url)):
            client.post(reverse("judge_run_start", args=ARGS), {
                "reviewer": name, "model": "m", "base_url": url, "limit": "1"}, HTTP_HX_REQUEST="true")
            errors[name] = JudgeRun.objects.get(reviewer__username=name).error
        with pytest.raises(CommandError) as cli:
            call_command("autolabel", "--run", "judged", "--reviewer", "judge-cli", "--model", "m",
                         "--base-url", server.base_url, "--limit", "1", "--max-retries", "0")
    assert errors == {"judge-closed": f"question missing: {BROWSER_REQUEST_FAILED}",
                      "judge-404": f"question missing: {BROWSER_REQUEST_FAILED}"}
    assert f"last error: question missing: {server.base_url} answered HTTP 404" in str(cli.value)
