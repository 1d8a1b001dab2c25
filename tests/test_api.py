"""The HTTP API (SPEC §6) on the real ExpertQA fixture: the figures equal
the commands' JSON, writes keep the pages' rules (409 on a conflict, 422
naming the field, nothing written), every write is audited with its token's
name, lists page and filter, and the schema is valid OpenAPI 3."""

from __future__ import annotations

import hashlib
import io
import json
from collections import Counter

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from openapi_spec_validator import validate

from labeling.api.access import run_of
from labeling.api.pages import PageIn, paged
from labeling.api.reviews import _claims
from labeling.integrations.tokens import token_authenticate, token_create
from labeling.models import Answer, AuditEvent, Claim, Label, LabelTableVersion, Membership, Role, Run
from tests.conftest import EXPERTQA_PATH
from tests.counted_run import counted_run
from tests.factories import ReviewerFactory

RUN = "rr_gs_gpt4"
RUN_B = "rr_gs_gpt4-v2"
BASE = "/api/v1/projects/expertqa"


def _fixture_rows(run: str = RUN) -> list[dict]:
    rows = [json.loads(line) for line in EXPERTQA_PATH.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [row for row in rows if row["run"] == run]


class Api:
    """A test client speaking as one token."""

    def __init__(self, client, secret: str):
        self.client, self.headers = client, {"Authorization": f"Bearer {secret}"}

    def get(self, url: str, params: dict | None = None):
        return self.client.get(BASE + url, params or {}, headers=self.headers)

    def send(self, method: str, url: str, body=None, *, content_type: str = "application/json"):
        data = body if isinstance(body, (bytes, str)) else json.dumps(body if body is not None else {})
        return self.client.generic(method, BASE + url, data, content_type, headers=self.headers)


@pytest.fixture
def people(expertqa_project):
    """Lead ``lea``, reviewers ``bob`` and ``ann``, viewer ``vic`` of project expertqa."""
    found = {}
    for name, role in (("lea", Role.LEAD), ("bob", Role.REVIEWER), ("ann", Role.REVIEWER), ("vic", Role.VIEWER)):
        found[name] = ReviewerFactory(username=name)
        Membership.objects.create(project=expertqa_project, reviewer=found[name], role=role)
    return found


@pytest.fixture
def as_(client, expertqa_project, people):
    """``as_("bob")``: an Api client with a token of bob's named ``bob-ci``."""
    def make(name: str) -> Api:
        issued = token_create(project=expertqa_project, reviewer=people[name], created_by=None, name=f"{name}-ci")
        return Api(client, issued.secret)
    return make


def _cli(*argv: str) -> dict:
    out = io.StringIO()
    call_command(*argv, "--project", "expertqa", "--format", "json", stdout=out, stderr=io.StringIO())
    return json.loads(out.getvalue())


# -- figures: the same JSON as the commands ------------------------------------------------------------


def test_score_equals_the_score_commands_json(as_):
    """rr_gs_gpt4 in the fixture: 162 claims, 123 cited (110 SUPPORTED + 13 UNSUPPORTED),
    39 UNCITED: coverage 123/162, support 110/123."""
    api_client = as_("vic")
    response = api_client.get(f"/runs/{RUN}/score")
    assert response.status_code == 200
    body = response.json()
    assert body == _cli("score", "--run", RUN)
    counts = Counter((bool(c["citations"]), c["label"]) for row in _fixture_rows() for c in row["claims"])
    assert counts == {(True, "SUPPORTED"): 110, (True, "UNSUPPORTED"): 13, (False, "UNCITED"): 39}
    assert (body["claims"]["claims"], body["claims"]["cited"], body["claims"]["supported"]) == (162, 123, 110)
    assert body["claims"]["coverage"] == 123 / 162 and body["claims"]["support"] == 110 / 123
    one = api_client.get(f"/runs/{RUN}/score", {"reviewer": "expertqa-annotator", "citation_precision_rule": "strict"})
    assert one.json() == _cli("score", "--run", RUN, "--reviewer", "expertqa-annotator",
                              "--citation-precision-rule", "strict")


def test_score_refuses_bad_parameters_naming_them(as_):
    api_client = as_("vic")
    for params, field in (({"reviewer": "nobody"}, "reviewer"), ({"match_method": "llm"}, "match_method"),
                          ({"citation_precision_rule": "loose"}, "citation_precision_rule"),
                          ({"match_threshold": "2"}, "match_threshold")):
        response = api_client.get(f"/runs/{RUN}/score", params)
        assert response.status_code == 422, params
        assert [e["field"] for e in response.json()["errors"]] == [field]


def _run_b(flips: int) -> bytes:
    """rr_gs_gpt4 again as run rr_gs_gpt4-v2, its first ``flips`` SUPPORTED claims UNSUPPORTED."""
    lines, left = [], flips
    for row in _fixture_rows():
        row = json.loads(json.dumps(row))
        row["run"] = RUN_B
        for claim in row["claims"]:
            if left and claim["label"] == "SUPPORTED":
                claim["label"], claim["justification"], left = "UNSUPPORTED", "the span says less", left - 1
        lines.append(json.dumps(row))
    return ("\n".join(lines) + "\n").encode()


def test_import_then_compare_and_gate_as_the_commands_do(as_):
    """B = A with 10 of its 110 SUPPORTED claims UNSUPPORTED: support 110/123 → 100/123, a drop
    of 10/123 = 0.0813. The gate with support ≤ 0.05 fails (409, as the command exits 1); with
    ≤ 0.10 it passes (200)."""
    lead = as_("lea")
    imported = lead.send("POST", "/answers", _run_b(10), content_type="application/x-ndjson")
    assert imported.status_code == 201, imported.content
    assert (imported.json()["runs"], imported.json()["answers_created"], imported.json()["labels_created"]) == (
        [RUN_B], 29, 162)
    compared = lead.get("/compare", {"a": RUN, "b": RUN_B})
    assert compared.status_code == 200
    out = io.StringIO()
    call_command("compare", "--run", RUN, "--run", RUN_B, "--project", "expertqa", "--format", "json", stdout=out)
    assert compared.json() == json.loads(out.getvalue())
    assert compared.json()["claims"]["label_flips"] == 10 and len(compared.json()["label_flips"]) == 10

    failed = lead.send("POST", f"/runs/{RUN_B}/gate", {"baseline": RUN, "max_drop": {"support": 0.05}})
    assert failed.status_code == 409
    verdict = failed.json()
    assert verdict["passed"] is False and verdict["questions"] == 29
    assert verdict["values"] == {"support": {"run": 100 / 123, "baseline": 110 / 123}}
    assert verdict["failures"] == [f"support: {RUN_B} 0.8130 vs baseline {RUN} 0.8943: dropped 0.0813 > allowed 0.0500"]
    with pytest.raises(CommandError) as exc:
        call_command("score", "--run", RUN_B, "--baseline", RUN, "--max-drop", "support=0.05", "--project", "expertqa",
                     stdout=io.StringIO())
    assert exc.value.returncode == 1 and verdict["failures"][0] in str(exc.value)

    passed = lead.send("POST", f"/runs/{RUN_B}/gate", {"baseline": RUN, "max_drop": {"support": 0.1, "coverage": 0}})
    assert passed.status_code == 200
    assert passed.json()["passed"] is True and passed.json()["failures"] == []
    assert passed.json()["bounds"] == {"support": 0.1, "coverage": 0.0}
    # The differences are the command's (score --baseline --format json).
    out = io.StringIO()
    call_command("score", "--run", RUN_B, "--baseline", RUN, "--max-drop", "support=0.1", "--project", "expertqa",
                 "--format", "json", stdout=out, stderr=io.StringIO())
    assert passed.json()["differences"] == json.loads(out.getvalue())["differences"]
    assert passed.json()["differences"]["support"]["delta"] == pytest.approx(-10 / 123)

    # Non-inferiority at 95%: the interval of B − A must stay above −0.1; as the command decides.
    strict = lead.send("POST", f"/runs/{RUN_B}/gate",
                       {"baseline": RUN, "max_drop": {"support": 0.1}, "confidence": 0.95})
    try:
        call_command("score", "--run", RUN_B, "--baseline", RUN, "--max-drop", "support=0.1", "--confidence", "0.95",
                     "--project", "expertqa", stdout=io.StringIO(), stderr=io.StringIO())
        command_passed = True
    except CommandError as exc:
        command_passed = False
        assert strict.json()["failures"][0] in str(exc)
    assert strict.json()["passed"] is command_passed
    assert strict.status_code == (200 if command_passed else 409)


@pytest.mark.parametrize(("body", "field"), [
    ({"baseline": "post_hoc_gs_gpt4", "max_drop": {}}, "max_drop"),
    ({"baseline": "post_hoc_gs_gpt4", "max_drop": {"suport": 0.05}}, "max_drop"),
    ({"baseline": "post_hoc_gs_gpt4", "max_drop": {"support": -0.1}}, "max_drop"),
    ({"baseline": "post_hoc_gs_gpt4", "max_drop": {"support": "much"}}, "max_drop.support"),
    ({"baseline": "no-such-run", "max_drop": {"support": 0.05}}, "baseline"),
    ({"baseline": RUN, "max_drop": {"support": 0.05}}, "baseline"),
    # No question in common (each ExpertQA question is answered by one run).
    ({"baseline": "rr_sphere_gpt4", "max_drop": {"support": 0.05}}, "baseline"),
    ({"max_drop": {"support": 0.05}}, "baseline"),
    ({"baseline": "post_hoc_gs_gpt4", "max_drop": {"support": 0.05}, "bound": 1}, "bound"),
])
def test_gate_refuses_bad_bounds_naming_the_field(as_, body, field):
    response = as_("lea").send("POST", f"/runs/{RUN}/gate", body)
    assert response.status_code == 422, response.content
    assert [e["field"] for e in response.json()["errors"]] == [field]


def test_agreement_equals_the_agreement_commands_json(as_, people):
    """bob labels the first 12 cited claims of rr_gs_gpt4 through the API, UNSUPPORTED on every
    third: the run's pairs and figures, and the pair's, are the command's."""
    bob = as_("bob")
    cited = [c for c in bob.get(f"/runs/{RUN}/claims", {"limit": 100}).json()["items"] if c["citations"]][:12]
    for i, claim in enumerate(cited):
        value = "UNSUPPORTED" if i % 3 == 0 else "SUPPORTED"
        saved = bob.send("POST", f"/runs/{RUN}/claims/{claim['id']}/labels",
                         {"value": value, "justification": "checked" if value == "UNSUPPORTED" else "",
                          "revision": claim["revision"], "base_label": None})
        assert saved.status_code == 201, saved.content
    everyone = bob.get(f"/runs/{RUN}/agreement")
    assert everyone.status_code == 200
    assert everyone.json() == _cli("agreement", "--run", RUN)
    assert everyone.json()["reviewers"] == ["bob", "expertqa-annotator"]
    pair = bob.get(f"/runs/{RUN}/agreement", {"reviewer": ["expertqa-annotator", "bob"]})
    assert pair.json() == _cli("agreement", "--run", RUN, "--reviewer", "expertqa-annotator", "--reviewer", "bob")
    assert pair.json()["n"] == 12
    refused = bob.get(f"/runs/{RUN}/agreement", {"reviewer": ["bob"]})
    assert refused.status_code == 422 and refused.json()["errors"][0]["field"] == "reviewer"


# -- labels: the review page's rules ----------------------------------------------------------------


def _first_cited(api_client: Api) -> dict:
    return next(c for c in api_client.get(f"/runs/{RUN}/claims", {"limit": 20}).json()["items"] if c["citations"])


def test_label_write_is_saved_as_the_tokens_reviewer_and_audited_with_its_name(as_, people):
    bob = as_("bob")
    claim = _first_cited(bob)
    assert claim["my_label"] is None
    assert [label["reviewer"] for label in claim["labels"]] == ["expertqa-annotator"]
    response = bob.send("POST", f"/runs/{RUN}/claims/{claim['id']}/labels",
                        {"value": "UNSUPPORTED", "justification": "the passage names another year",
                         "revision": claim["revision"], "base_label": None})
    assert response.status_code == 201
    label = Label.objects.get(pk=response.json()["id"])
    assert (label.reviewer, label.value, label.is_current) == (people["bob"], "UNSUPPORTED", True)
    event = AuditEvent.objects.filter(action="label").get()
    assert (event.actor, event.claim_id, event.detail) == (
        people["bob"], claim["id"], {"value": "UNSUPPORTED", "previous": None, "token": "bob-ci"})
    again = bob.get(f"/runs/{RUN}/claims/{claim['id']}")
    assert again.json()["my_label"] == label.pk
    # The same value and justification again: the current label, unchanged (200).
    same = bob.send("POST", f"/runs/{RUN}/claims/{claim['id']}/labels",
                    {"value": "UNSUPPORTED", "justification": "the passage names another year",
                     "revision": claim["revision"], "base_label": label.pk})
    assert (same.status_code, same.json()["id"]) == (200, label.pk)
    assert AuditEvent.objects.filter(action="label").count() == 1


def test_a_label_written_against_an_old_state_is_a_409_and_nothing_is_saved(as_, people):
    bob = as_("bob")
    claim = _first_cited(bob)
    url = f"/runs/{RUN}/claims/{claim['id']}/labels"
    first = bob.send("POST", url, {"value": "SUPPORTED", "revision": claim["revision"], "base_label": None})
    assert first.status_code == 201
    before = (Label.objects.count(), AuditEvent.objects.count())
    # Written as if bob had no label yet (another tab of his saved one meanwhile).
    stale = bob.send("POST", url, {"value": "UNSUPPORTED", "justification": "x", "revision": claim["revision"],
                                   "base_label": None})
    assert stale.status_code == 409
    assert stale.json()["code"] == "conflict" and stale.json()["newer"]["id"] == first.json()["id"]
    edited = bob.send("POST", url, {"value": "UNSUPPORTED", "justification": "x", "revision": claim["revision"] + 1,
                                    "base_label": first.json()["id"]})
    assert edited.status_code == 409 and "was edited" in edited.json()["detail"]
    assert (Label.objects.count(), AuditEvent.objects.count()) == before


@pytest.mark.parametrize(("body", "status", "field"), [
    ({"value": "UNSUPPORTED", "justification": "  ", "revision": 1, "base_label": None}, 422, "justification"),
    ({"value": "UNCITED", "revision": 1, "base_label": None}, 422, "value"),
    ({"value": "MAYBE", "revision": 1, "base_label": None}, 422, "value"),
    ({"value": "SUPPORTED", "revision": "one", "base_label": None}, 422, "revision"),
    ({"value": "SUPPORTED", "revision": 1}, 422, "base_label"),
    ({"value": "SUPPORTED", "revision": 1, "base_label": None, "justifcation": "typo"}, 422, "justifcation"),
    ({"value": "SUPPORTED", "revision": 1, "base_label": None, "justification": "x" * 10_001}, 422, "justification"),
    ([1, 2], 422, "body"),
    ('{"value": "SUPPORTED", ', 400, "body"),
    ("", 422, "body"),
])
def test_bad_label_bodies_answer_4xx_naming_the_field_and_write_nothing(as_, body, status, field):
    bob = as_("bob")
    claim = _first_cited(bob)
    before = (Label.objects.count(), AuditEvent.objects.count())
    response = bob.send("POST", f"/runs/{RUN}/claims/{claim['id']}/labels", body)
    assert response.status_code == status, response.content
    assert field in [e["field"] for e in response.json()["errors"]]
    assert (Label.objects.count(), AuditEvent.objects.count()) == before


def test_a_huge_body_is_413_and_writes_nothing(as_):
    bob = as_("bob")
    claim = _first_cited(bob)
    body = json.dumps({"value": "SUPPORTED", "revision": 1, "base_label": None, "justification": "x" * (6 << 20)})
    before = Label.objects.count()
    response = bob.send("POST", f"/runs/{RUN}/claims/{claim['id']}/labels", body)
    assert response.status_code == 413
    assert response.json()["errors"] == [{"field": "body", "reason": "too large"}]
    assert Label.objects.count() == before


def test_roles_as_on_the_pages(as_, expertqa_project):
    vic, bob = as_("vic"), as_("bob")
    claim = _first_cited(vic)
    body = {"value": "SUPPORTED", "revision": claim["revision"], "base_label": None}
    assert vic.send("POST", f"/runs/{RUN}/claims/{claim['id']}/labels", body).status_code == 403
    assert bob.send("POST", "/runs", {"name": "new"}).status_code == 403
    assert bob.get("/audit").status_code == 403
    # A claim of another run of the project: 404, nothing saved.
    other = Claim.objects.filter(answer__run__name="rr_sphere_gpt4").first()
    assert bob.send("POST", f"/runs/{RUN}/claims/{other.pk}/labels", body).status_code == 404
    # Assigned runs: bob labels only the runs he is assigned to once anyone is.
    Run.objects.get(name=RUN).assignments.create(reviewer=Membership.objects.get(reviewer__username="ann").reviewer)
    refused = bob.send("POST", f"/runs/{RUN}/claims/{claim['id']}/labels", body)
    assert refused.status_code == 403 and "not assigned" in refused.json()["detail"]


def test_a_blind_run_shows_a_reviewer_only_their_own_labels(as_, people):
    Run.objects.filter(name=RUN).update(overlap=2)
    bob = as_("bob")
    claim = _first_cited(bob)
    assert claim["labels"] == []
    bob.send("POST", f"/runs/{RUN}/claims/{claim['id']}/labels",
             {"value": "SUPPORTED", "revision": claim["revision"], "base_label": None})
    assert [lab["reviewer"] for lab in bob.get(f"/runs/{RUN}/claims/{claim['id']}").json()["labels"]] == ["bob"]
    assert bob.get(f"/runs/{RUN}/score").status_code == 403
    own = bob.get(f"/runs/{RUN}/score", {"reviewer": "bob"})
    assert own.status_code == 200 and own.json()["claims"]["supported"] == 1
    assert bob.get("/labels", {"run": RUN}).json()["count"] == 1
    assert bob.get(f"/runs/{RUN}/versions").status_code == 403
    # A lead sees everyone's: the 162 imported labels and bob's.
    assert as_("lea").get("/labels", {"run": RUN}).json()["count"] == 163


# -- lists: pages and filters ---------------------------------------------------------------------


def test_claims_page_in_answer_order_with_their_citations(as_):
    vic = as_("vic")
    everything = vic.get(f"/runs/{RUN}/claims", {"limit": 500}).json()
    assert everything["count"] == 162 and len(everything["items"]) == 162
    rows = _fixture_rows()
    expected = [(row["question_id"], i + 1, claim["text"]) for row in sorted(rows, key=lambda r: r["question_id"])
                for i, claim in enumerate(row["claims"])]
    assert [(c["question_id"], c["index"], c["text"]) for c in everything["items"]] == expected
    page = vic.get(f"/runs/{RUN}/claims", {"limit": 2, "offset": 3}).json()
    assert (page["count"], page["limit"], page["offset"]) == (162, 2, 3)
    assert [c["id"] for c in page["items"]] == [c["id"] for c in everything["items"][3:5]]
    first = everything["items"][0]
    source = sorted(rows, key=lambda r: r["question_id"])[0]
    cited = [c["passage_id"] for c in source["claims"][0]["citations"]]
    assert [c["passage_id"] for c in first["citations"]] == cited
    one = vic.get(f"/runs/{RUN}/claims", {"question_id": source["question_id"]}).json()
    assert one["count"] == len(source["claims"])
    assert vic.get(f"/runs/{RUN}/claims", {"limit": 501}).status_code == 422


def test_labels_filter_by_run_and_reviewer(as_):
    """The annotator labeled every claim of rr_gs_gpt4 (162) and all but 20 of the fixture's 735."""
    vic = as_("vic")
    claims = [c for line in EXPERTQA_PATH.read_text().splitlines() if line.strip() for c in json.loads(line)["claims"]]
    total = sum(1 for c in claims if c.get("label"))
    assert (len(claims), total) == (735, 715)
    assert vic.get("/labels").json()["count"] == total
    assert vic.get("/labels", {"run": RUN}).json()["count"] == 162
    assert vic.get("/labels", {"run": RUN, "reviewer": "expertqa-annotator"}).json()["count"] == 162
    assert vic.get("/labels", {"run": RUN, "reviewer": "bob"}).json()["count"] == 0
    values = Counter(label["value"] for label in vic.get("/labels", {"run": RUN, "limit": 500}).json()["items"])
    assert values == {"SUPPORTED": 110, "UNCITED": 39, "UNSUPPORTED": 13}


@pytest.mark.parametrize("claims", [5, 500])
def test_claims_list_query_budget(client, django_assert_max_num_queries, claims, db):
    """Token (1), run with the role (1), count (1), claims with their answers (1), citations with
    passages (1), labels with reviewers (1), last-use update (≤ 1): 7 for a page of any size."""
    from labeling.importers.load import project_for_import, run_import

    project = project_for_import(slug="budget")
    answers = [{"question_id": f"q{i}", "question": f"Question {i}?", "run": "r", "answer": "x",
                "passages": [{"id": "P1", "source": "s", "text": "text"}],
                "claims": [{"text": f"Claim {i}.{j}", "citations": [{"passage_id": "P1"}], "label": "SUPPORTED",
                            "reviewer": "expert"} for j in range(5)]} for i in range(claims // 5)]
    run_import(project=project, source=("\n".join(json.dumps(a) for a in answers) + "\n").encode())
    lead = ReviewerFactory(username="budget-lead")
    Membership.objects.create(project=project, reviewer=lead, role=Role.LEAD)
    secret = token_create(project=project, reviewer=lead, created_by=None).secret
    with django_assert_max_num_queries(7):
        response = client.get("/api/v1/projects/budget/runs/r/claims", {"limit": 500},
                              headers={"Authorization": f"Bearer {secret}"})
    assert response.json()["count"] == claims and len(response.json()["items"]) == claims
    assert all(len(c["labels"]) == 1 and len(c["citations"]) == 1 for c in response.json()["items"])


# -- imports, runs, versions, audit: writes audited with the token ---------------------------------


def _answers(*lines: dict) -> bytes:
    return ("\n".join(json.dumps(line) for line in lines) + "\n").encode()


GOOD = {"question_id": "api-q1", "question": "Does the API import?", "run": "api-run",
        "answer": "It imports [P1]. It checks [P2].",
        "passages": [{"id": "P1", "source": "a.md", "text": "It imports."}, {"id": "P2", "source": "b.md",
                                                                           "text": "It checks."}]}


def test_import_is_all_or_nothing_with_every_bad_line_named(as_):
    lead = as_("lea")
    before = (Answer.objects.count(), Run.objects.count(), AuditEvent.objects.count())
    bad = _answers(GOOD, {"question_id": "api-q2", "run": "api-run", "answer": "no question"},
                   {**GOOD, "question_id": "api-q3", "claims": [{"text": "x", "citations": [], "label": "MAYBE"}]})
    response = lead.send("POST", "/answers", bad, content_type="application/x-ndjson")
    assert response.status_code == 422
    body = response.json()
    assert body["detail"] == "2 problem(s) in the file: nothing was imported."
    assert [(e["line"], e["field"]) for e in body["errors"]] == [(2, "question"), (3, "claims[0].label")]
    assert (Answer.objects.count(), Run.objects.count(), AuditEvent.objects.count()) == before


def test_import_creates_the_run_and_is_audited_with_the_token(as_, people):
    lead = as_("lea")
    created = lead.send("POST", "/answers", _answers(GOOD), content_type="application/x-ndjson")
    assert created.status_code == 201
    assert (created.json()["answers_created"], created.json()["claims_created"],
            created.json()["citations_created"]) == (1, 2, 2)
    event = AuditEvent.objects.get(action="import_answers", run_name="api-run")
    assert (event.actor, event.run_name, event.target, event.detail["token"]) == (
        people["lea"], "api-run", "API upload (jsonl)", "lea-ci")
    again = lead.send("POST", "/answers", _answers(GOOD), content_type="application/x-ndjson")
    assert (again.status_code, again.json()["answers_unchanged"]) == (200, 1)
    # As a multipart upload under another run name, its format from the file name.
    upload = io.BytesIO(_answers(GOOD))
    upload.name = "answers.jsonl"
    form = lead.client.post(BASE + "/answers?run=api-run-2", {"file": upload}, headers=lead.headers)
    assert form.status_code == 201 and form.json()["runs"] == ["api-run-2"]


def test_import_refuses_oversized_empty_and_unknown_formats(as_, settings):
    lead = as_("lea")
    settings.CITELAB_MAX_UPLOAD_BYTES = 100
    big = lead.send("POST", "/answers", _answers(GOOD), content_type="application/x-ndjson")
    assert big.status_code == 413 and big.json()["errors"][0]["field"] == "body"
    settings.CITELAB_MAX_UPLOAD_BYTES = 1 << 20
    empty = lead.send("POST", "/answers", b"", content_type="application/x-ndjson")
    assert empty.status_code == 422 and empty.json()["errors"][0]["field"] == "body"
    odd = lead.send("POST", "/answers?format=pdf", _answers(GOOD), content_type="application/x-ndjson")
    assert odd.status_code == 422 and odd.json()["errors"][0]["field"] == "format"
    bad_run = lead.send("POST", "/answers?run=a/b", _answers(GOOD), content_type="application/x-ndjson")
    assert bad_run.status_code == 422 and bad_run.json()["errors"][0]["field"] == "run"
    assert as_("bob").send("POST", "/answers", _answers(GOOD), content_type="application/x-ndjson").status_code == 403
    assert not Run.objects.filter(name__startswith="api-run").exists()


def test_runs_are_created_renamed_and_deleted_by_a_lead_with_the_token_in_the_log(as_, people):
    lead = as_("lea")
    created = lead.send("POST", "/runs", {"name": "prompt-v3", "metadata": {"model": "gpt-4o"}})
    assert created.status_code == 201 and created.json()["metadata"] == {"model": "gpt-4o"}
    taken = lead.send("POST", "/runs", {"name": "prompt-v3"})
    assert taken.status_code == 422 and taken.json()["errors"][0]["field"] == "name"
    assert lead.send("POST", "/runs", {"name": "a/b"}).json()["errors"][0]["field"] == "name"
    renamed = lead.send("PATCH", "/runs/prompt-v3", {"name": "prompt-v4"})
    assert renamed.status_code == 200 and renamed.json()["name"] == "prompt-v4"
    deleted = lead.send("DELETE", "/runs/prompt-v4")
    assert deleted.status_code == 200 and deleted.json()["deleted"] == "prompt-v4"
    assert lead.get("/runs/prompt-v4").status_code == 404
    events = list(AuditEvent.objects.filter(run_name__startswith="prompt-v").order_by("id")
                  .values_list("action", "actor_name", "detail__token"))
    assert events == [("create", "lea", "lea-ci"), ("rename", "lea", "lea-ci"), ("delete", "lea", "lea-ci")]
    runs = lead.get("/runs").json()
    assert runs["count"] == 4 and {r["name"]: r["answers"] for r in runs["items"]}[RUN] == 29


def test_versions_are_saved_listed_and_downloaded_verified(as_, people):
    lead = as_("lea")
    saved = lead.send("POST", f"/runs/{RUN}/versions", {"note": "expert labels"})
    assert saved.status_code == 201
    version = LabelTableVersion.objects.get()
    assert saved.json()["sha256"] == version.sha256 and saved.json()["row_count"] == 162
    assert lead.send("POST", f"/runs/{RUN}/versions", {"note": "again"}).status_code == 409
    assert [v["number"] for v in lead.get(f"/runs/{RUN}/versions").json()] == [1]
    canonical = lead.get(f"/runs/{RUN}/versions/1/file")
    assert canonical.status_code == 200
    assert hashlib.sha256(canonical.content).hexdigest() == version.sha256
    workbook = lead.get(f"/runs/{RUN}/versions/1/file", {"format": "xlsx"})
    assert workbook.status_code == 200 and b"".join(workbook.streaming_content)[:2] == b"PK"
    assert lead.get(f"/runs/{RUN}/versions/2").status_code == 404
    tokens = list(AuditEvent.objects.filter(action__in=["snapshot", "export"]).order_by("id")
                  .values_list("action", "detail__token"))
    assert tokens == [("snapshot", "lea-ci"), ("export", "lea-ci"), ("export", "lea-ci")]


def test_audit_log_pages_and_filters(as_, people):
    lead = as_("lea")
    lead.send("POST", "/runs", {"name": "logged"})
    log = lead.get("/audit", {"run": "logged"}).json()
    assert log["count"] == 1
    assert log["items"][0] | {"at": None} == {"at": None, "actor": "lea", "action": "create", "run": "logged",
                                             "target": "logged", "claim_id": None, "detail": {"token": "lea-ci"}}
    everything = lead.get("/audit").json()
    # The fixture's import: one event per run, from the command line; then lea's.
    assert [(e["actor"], e["action"]) for e in everything["items"]] == [("command line", "import_answers")] * 4 + [
        ("lea", "create")]
    assert lead.get("/audit", {"actor": "lea"}).json()["count"] == 1
    assert lead.get("/audit", {"action": "rename"}).json()["count"] == 0
    assert lead.get("/audit", {"action": "nap"}).json()["errors"][0]["field"] == "action"


def test_judge_runs_start_for_a_lead_and_refuse_a_person_as_judge(as_, people, django_capture_on_commit_callbacks):
    lead = as_("lea")
    with django_capture_on_commit_callbacks() as queued:
        started = lead.send("POST", f"/runs/{RUN}/judge-runs", {"judge": "judge-a", "model": "m", "answer_limit": 2})
    assert started.status_code == 202
    assert (started.json()["status"], started.json()["answers_total"], started.json()["judge"]) == (
        "queued", 2, "judge-a")
    # Handed to the task queue only once the request's transaction commits.
    assert len(queued) == 1
    assert [jr["id"] for jr in lead.get(f"/runs/{RUN}/judge-runs").json()] == [started.json()["id"]]
    assert lead.get(f"/runs/{RUN}/judge-runs/{started.json()['id']}").json()["finished"] is False
    person = lead.send("POST", f"/runs/{RUN}/judge-runs", {"judge": "bob", "model": "m"})
    assert person.status_code == 422 and person.json()["errors"][0]["field"] == "judge"
    assert as_("bob").send("POST", f"/runs/{RUN}/judge-runs", {"judge": "judge-b", "model": "m"}).status_code == 403
    both = lead.send("POST", "/answers?judge=judge-c", _answers(GOOD), content_type="application/x-ndjson")
    assert both.status_code == 422 and both.json()["errors"][0]["field"] == "model"
    # The judge cannot start (a person's name): the import is undone with it.
    with django_capture_on_commit_callbacks() as queued:
        undone = lead.send("POST", "/answers?judge=bob&model=m", _answers(GOOD), content_type="application/x-ndjson")
    assert undone.status_code == 422 and undone.json()["errors"][0]["field"] == "judge"
    assert not Run.objects.filter(name="api-run").exists() and queued == []


# -- the schema and its docs ------------------------------------------------------------------------


def test_the_schema_is_valid_openapi_3_with_the_issue_paths(client, db):
    response = client.get("/api/v1/openapi.json")
    assert response.status_code == 200
    schema = response.json()
    validate(schema)
    assert schema["openapi"].startswith("3.")
    assert "get" in schema["paths"]["/api/v1/projects/{slug}/runs/{run}/score"]
    assert "post" in schema["paths"]["/api/v1/projects/{slug}/runs/{run}/gate"]
    assert schema["components"]["securitySchemes"]["BearerToken"] == {"type": "http", "scheme": "bearer"}
    operations = {(method, path) for path, methods in schema["paths"].items() for method in methods}
    assert len(operations) == 24
    assert all(op.get("security") == [{"BearerToken": []}] for methods in schema["paths"].values()
               for op in methods.values())


def test_the_docs_page_serves_swagger_ui_from_the_app_itself(client, db):
    response = client.get("/api/v1/docs")
    assert response.status_code == 200
    html = response.content.decode()
    assert '<script src="/static/ninja/swagger-ui-bundle.js">' in html
    assert "cdn" not in html.lower() and "https://" not in html
    assert "script-src 'self'" in response["Content-Security-Policy"]
    assert client.get("/static/ninja/swagger-ui-bundle.js").status_code == 200


def test_api_reads_query_counts(db, rf, django_assert_num_queries):
    """tests/counted_run.py's run through rev1's token: nine claims, each with its citations and
    current labels (three on a cited claim)."""
    world = counted_run()
    request = rf.get("/")
    request.auth = token_authenticate(token_create(project=world.project, reviewer=world.rev1,
                                                   created_by=world.lead).secret)
    # The run with whether it has assignments and whether the token's reviewer is assigned.
    with django_assert_num_queries(1):
        run = run_of(request, "counts", "r1")
    claims = _claims(run, reviewer_id=world.rev1.pk, everyone=True, only=None)
    # The page's claims (+ answers), their citations (+ passages), their current labels (+ reviewers).
    with django_assert_num_queries(3):
        assert [len(claim.current_labels) for claim in claims[:3]] == [3, 3, 0]
    # The page's three, then the count.
    with django_assert_num_queries(4):
        page = paged(claims, PageIn(limit=2, offset=0), lambda claim: {"id": claim.pk})
    assert (len(page["items"]), page["count"]) == (2, 9)
