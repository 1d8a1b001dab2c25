"""An LLM judge labels a run through a fake OpenAI-compatible server on
127.0.0.1 (SPEC §4.4): labels and counts exactly as scripted, nothing written
for an answer whose request or reply failed, re-running fills only what is
missing, and the API key is never printed."""

from __future__ import annotations

import json
import logging
from io import StringIO

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command

from labeling.judges.protocol import JUDGE_PROMPT, JudgeEndpoint, parse_reply, prompt_sha256
from labeling.judges.runs import judge_run_create, judge_run_execute
from labeling.models import AuditEvent, Claim, JudgeRun, Label, Reviewer, ReviewerKind, Run
from labeling.review.tallies import run_counts, run_progress
from tests.judge_server import QUESTIONS, JudgeServer

SECRET = "sk-test-DO-NOT-PRINT-0123456789abcdef"
# Seconds the judge client waits for a reply: the "timeout" question never answers in
# time (tests/judge_server.py), a valid one answers in milliseconds, with room for a busy
# machine (0.5 s was tight at load 8).
CLIENT_TIMEOUT = "3"
def _server(**kwargs) -> JudgeServer:
    """Every claim ending in "two." is UNSUPPORTED, the rest SUPPORTED."""
    labels = {f"{q} two.": "UNSUPPORTED" for q in QUESTIONS}
    behaviours = {"missing": "missing", "unknown": "unknown", "prose": "prose", "rate limited": "rate_limit_once",
                  "timeout": "timeout"}
    return JudgeServer(labels=labels, behaviours=behaviours, **kwargs)


def _labels(run: Run, name: str) -> dict[str, str]:
    return dict(Label.objects.filter(claim__answer__run=run, reviewer__username=name, is_current=True)
                .values_list("claim__text", "value"))


def test_autolabel_records_scripted_verdicts_and_counts_every_gap(judging_run, monkeypatch, capsys, caplog):
    """12 cited claims in 6 answers. valid: 2 labeled; missing: 1 labeled, 1 missing;
    unknown: 2 labeled, 1 unknown verdict; prose: answer failed, 0 written; rate
    limited: 429 then 2 labeled; timeout: answer failed, 0 written. Labeled
    2 + 1 + 2 + 2 = 7; pending for the judge 12 − 7 = 5."""
    monkeypatch.setenv("CITELAB_OPENAI_API_KEY", SECRET)
    out, err = StringIO(), StringIO()
    caplog.set_level(logging.DEBUG)
    assert _labels(judging_run, "judge-a") == {}
    with _server() as server:
        call_command("autolabel", "--run", "judged", "--reviewer", "judge-a", "--model", "fake-model",
                     "--base-url", server.base_url, "--timeout", CLIENT_TIMEOUT, "--max-retries", "1",
                     stdout=out, stderr=err)
    assert _labels(judging_run, "judge-a") == {
        "valid one.": "SUPPORTED", "valid two.": "UNSUPPORTED",
        "missing two.": "UNSUPPORTED",
        "unknown one.": "SUPPORTED", "unknown two.": "UNSUPPORTED",
        "rate limited one.": "SUPPORTED", "rate limited two.": "UNSUPPORTED",
    }
    judge = Reviewer.objects.get(username="judge-a")
    assert judge.kind == ReviewerKind.MODEL and not judge.has_usable_password()
    judge_run = JudgeRun.objects.get(reviewer=judge)
    assert (judge_run.status, judge_run.answers_total, judge_run.answers_done, judge_run.answers_failed) == (
        "done", 6, 4, 2)
    assert (judge_run.claims_labeled, judge_run.claims_missing, judge_run.claims_duplicated,
            judge_run.claims_malformed, judge_run.verdicts_unknown) == (7, 1, 0, 0, 1)
    assert (judge_run.model, judge_run.prompt, judge_run.prompt_sha256, judge_run.temperature) == (
        "fake-model", JUDGE_PROMPT, prompt_sha256(JUDGE_PROMPT), 0.0)
    assert judge_run.error.startswith("question timeout: no reply from")
    # The audit log has the judge run as one event, from the command line.
    (event,) = AuditEvent.objects.filter(run=judging_run).exclude(action="import_answers")
    assert (event.action, event.actor, event.target, event.detail["labeled"]) == (
        "label", None, "judge judge-a · 7 claims", 7)
    # The judge's pending count: cited claims it has not labeled, 12 − 7 = 5.
    progress = run_progress(run=judging_run, reviewer=judge)
    assert (progress.numerator, progress.denominator - progress.numerator) == (7, 5)
    # The reason is the justification.
    assert Label.objects.get(reviewer=judge, claim__text="valid two.").justification == "judged UNSUPPORTED: valid two."
    report = out.getvalue()
    assert "answers: 4 judged, 2 failed (nothing written for them), of 6" in report
    assert "claims left unlabeled: 1 missing verdict, 0 duplicated verdict, 0 malformed verdict" in report
    assert "verdicts for unknown ids (ignored): 1" in report
    # The key went to the server, and nowhere else.
    assert all(request["authorization"] == f"Bearer {SECRET}" for request in server.requests)
    printed = report + err.getvalue() + capsys.readouterr().out + capsys.readouterr().err + caplog.text
    assert SECRET not in printed
    assert SECRET not in json.dumps(list(JudgeRun.objects.values()), default=str)
    # 429 then success: the rate-limited answer was asked twice; the timed-out one twice (1 retry).
    asked = [json.loads(r["body"]["messages"][-1]["content"])["question"] for r in server.requests]
    assert asked.count("rate limited") == 2 and asked.count("timeout") == 2 and asked.count("valid") == 1


def test_request_carries_the_protocol_json_and_asks_for_json_output(judging_run):
    """The last user message is {"question", "claims": [{"id", "text", "citations": [{"passage_id", "text"}]}]}
    with only the cited claims, ids the claims' ids; JSON output is requested."""
    with JudgeServer() as server:
        judge_run = judge_run_create(run=judging_run, reviewer_name="judge-a", answer_limit=1,
                                     endpoint=JudgeEndpoint(model="m", base_url=server.base_url))
        judge_run_execute(judge_run.pk, api_key="k")
    (request,) = server.requests
    body = request["body"]
    assert request["path"] == "/v1/chat/completions"
    assert body["response_format"] == {"type": "json_object"} and body["model"] == "m" and body["temperature"] == 0
    assert body["messages"][0] == {"role": "system", "content": JUDGE_PROMPT}
    claims = {c.text: str(c.pk) for c in judging_run.answers.get(question_key="missing").claims.all()}
    assert json.loads(body["messages"][-1]["content"]) == {
        "question": "missing",
        "claims": [
            {"id": claims["missing one."], "text": "missing one.",
             "citations": [{"passage_id": "P1", "text": "missing one, says the passage."}]},
            {"id": claims["missing two."], "text": "missing two.",
             "citations": [{"passage_id": "P2", "text": "Something else entirely."}]},
        ],
    }


def test_rerun_fills_only_what_is_missing_and_relabel_asks_again(judging_run):
    """First pass without retries: valid 2 + missing 1 + unknown 2 = 5 claims labeled
    (prose, the 429 and the timeout fail their answers). Second pass with every
    behaviour valid asks only about the 12 − 5 = 7 claims still unlabeled (4
    answers: missing, prose, rate limited, timeout), and the judge's earlier
    labels stay as they were; --relabel asks about all 12 (history 5 + 7 + 12)."""
    with _server() as server:
        first = judge_run_create(run=judging_run, reviewer_name="judge-a",
                                 endpoint=JudgeEndpoint(model="m", base_url=server.base_url,
                                                        timeout=float(CLIENT_TIMEOUT), max_retries=0))
        judge_run_execute(first.pk, api_key="k")
    before = set(Label.objects.filter(reviewer__username="judge-a", is_current=True).values_list("pk", flat=True))
    assert len(before) == 5
    with JudgeServer(labels={f"{q} two.": "UNSUPPORTED" for q in QUESTIONS}) as server:
        second = judge_run_create(run=judging_run, reviewer_name="judge-a",
                                  endpoint=JudgeEndpoint(model="m", base_url=server.base_url))
        assert second.answers_total == 4
        second = judge_run_execute(second.pk, api_key="k")
        claims_asked = sum(len(json.loads(r["body"]["messages"][-1]["content"])["claims"]) for r in server.requests)
    assert claims_asked == 7 and second.claims_labeled == 7
    now = set(Label.objects.filter(reviewer__username="judge-a", is_current=True).values_list("pk", flat=True))
    assert before < now and len(now) == 12
    with JudgeServer() as server:
        third = judge_run_create(run=judging_run, reviewer_name="judge-a", relabel=True,
                                 endpoint=JudgeEndpoint(model="m", base_url=server.base_url))
        third = judge_run_execute(third.pk, api_key="k")
    assert (third.answers_total, third.claims_labeled) == (6, 12)
    # History kept: 5 + 7 + 12 labels, 12 current (all SUPPORTED now).
    assert Label.objects.filter(reviewer__username="judge-a").count() == 24
    assert set(_labels(judging_run, "judge-a").values()) == {"SUPPORTED"}


def test_duplicated_and_malformed_verdicts_leave_the_claim_unlabeled(judging_run):
    """'valid' answers with the first claim's verdict twice; 'missing' answer with a label "MAYBE":
    each first claim stays unlabeled, each second claim is labeled."""
    with JudgeServer(behaviours={"valid": "duplicate", "missing": "malformed"}) as server:
        judge_run = judge_run_create(run=judging_run, reviewer_name="judge-a", answer_limit=6,
                                     endpoint=JudgeEndpoint(model="m", base_url=server.base_url))
        judge_run = judge_run_execute(judge_run.pk, api_key="k")
    labels = _labels(judging_run, "judge-a")
    assert "valid one." not in labels and "missing one." not in labels
    assert labels["valid two."] == labels["missing two."] == "SUPPORTED"
    assert (judge_run.claims_duplicated, judge_run.claims_malformed, judge_run.claims_labeled) == (1, 1, 10)


def test_judge_labels_never_count_toward_support(judging_run):
    """Support counts human labels only (SPEC §4.4): after the judge labeled 12 cited
    claims, the run's support is still undefined with 12 claims pending."""
    with JudgeServer() as server:
        judge_run = judge_run_create(run=judging_run, reviewer_name="judge-a",
                                     endpoint=JudgeEndpoint(model="m", base_url=server.base_url))
        judge_run_execute(judge_run.pk, api_key="k")
    human = Reviewer.objects.create_user(username="human")
    counts = run_counts(run=judging_run, reviewer=human)
    assert (counts.supported, counts.unsupported, counts.pending) == (0, 0, 12)


def test_every_request_failing_marks_the_judge_run_failed_and_the_command_exits_nonzero(judging_run, monkeypatch):
    """HTTP 500 on every answer: status failed, nothing written, exit status 1 naming the error."""
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    behaviours = {q: "server_error" for q in QUESTIONS}
    with JudgeServer(behaviours=behaviours) as server, pytest.raises(CommandError) as raised:
        call_command("autolabel", "--run", "judged", "--reviewer", "judge-a", "--model", "m", "--base-url",
                     server.base_url, "--max-retries", "0", stdout=StringIO())
    assert "answers: 0 judged, 6 failed" in str(raised.value) and "answered HTTP 500" in str(raised.value)
    assert SECRET not in str(raised.value)
    assert JudgeRun.objects.get().status == "failed"
    assert Label.objects.filter(reviewer__username="judge-a").count() == 0


def test_a_person_cannot_be_the_judge(judging_run):
    Reviewer.objects.create_user(username="alice")
    with pytest.raises(ValidationError, match="'alice' is a human reviewer, not an automated labeler"):
        judge_run_create(run=judging_run, reviewer_name="alice", endpoint=JudgeEndpoint(model="m"))
    assert JudgeRun.objects.count() == 0


@pytest.mark.parametrize(("content", "expected"), [
    ('{"verdicts": [{"id": "1", "label": "SUPPORTED", "reason": "r"}, {"id": 2, "label": "unsupported"}]}',
     ({"1": "SUPPORTED", "2": "UNSUPPORTED"}, [], [], [], 0)),
    ('{"verdicts": [{"id": "1", "label": "SUPPORTED"}, {"id": "1", "label": "SUPPORTED"}, {"id": "9"}]}',
     ({}, ["2"], ["1"], [], 1)),
    ('{"verdicts": [{"id": "1", "label": "YES"}, {"id": "2", "label": "SUPPORTED", "reason": 5}, "x"]}',
     ({}, [], [], ["1", "2"], 1)),
    ('```json\n{"verdicts": [{"id": "2", "label": "SUPPORTED", "reason": ""}]}\n```',
     ({"2": "SUPPORTED"}, ["1"], [], [], 0)),
])
def test_parse_reply_matches_by_id_and_never_guesses(content, expected):
    """(labeled, missing, duplicated, malformed, unknown) for the ids ["1", "2"]."""
    parsed = parse_reply(content, ["1", "2"])
    labels = {claim_id: verdict.label for claim_id, verdict in parsed.verdicts.items()}
    assert (labels, parsed.missing, parsed.duplicated, parsed.malformed, parsed.unknown) == expected


@pytest.mark.parametrize("content", ["The claims are supported.", '[{"id": "1"}]', '{"verdict": []}', "", None])
def test_parse_reply_refuses_anything_but_the_json_object(content):
    from labeling.judges.protocol import JudgeReplyError

    with pytest.raises(JudgeReplyError):
        parse_reply(content, ["1"])


def test_claims_marked_not_factual_are_never_asked(judging_run):
    """"valid one." marked not a factual claim (SPEC §4.3b): the 'valid' request carries
    only "valid two."; 11 claims labeled."""
    Claim.objects.filter(text="valid one.").update(factual=False)
    with JudgeServer() as server:
        judge_run = judge_run_create(run=judging_run, reviewer_name="judge-a",
                                     endpoint=JudgeEndpoint(model="m", base_url=server.base_url))
        judge_run = judge_run_execute(judge_run.pk, api_key="k")
    asked = {json.loads(r["body"]["messages"][-1]["content"])["question"]:
             [c["text"] for c in json.loads(r["body"]["messages"][-1]["content"])["claims"]] for r in server.requests}
    assert asked["valid"] == ["valid two."] and judge_run.claims_labeled == 11
