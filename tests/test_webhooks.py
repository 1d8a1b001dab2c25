"""Webhooks (SPEC §6) against a receiver on 127.0.0.1 that this test
starts: signed deliveries of each event, retries with backoff until one is
accepted, an allow-list miss refused and logged, the lead's page with its
test delivery button. Tasks run at once (``CITELAB_TASKS_SYNC``) with no
delay between attempts."""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.core.exceptions import ValidationError

from labeling.importers.load import project_for_import, run_import
from labeling.integrations.tokens import token_create
from labeling.integrations.webhooks import MAX_ATTEMPTS, destination_problem, retry_delay, webhook_create
from labeling.judges.protocol import JudgeEndpoint
from labeling.judges.runs import judge_run_create, judge_run_execute
from labeling.models import Claim, DeliveryStatus, Label, Membership, Role, Run, Webhook, WebhookDelivery
from labeling.review.label_writes import label_save
from labeling.tables.versions import label_table_snapshot
from labeling.team.adjudication import adjudication_save
from tests.factories import ReviewerFactory
from tests.judge_server import JudgeServer


class Receiver:
    """An HTTP server on 127.0.0.1 that records every POST and answers 500 to the
    first ``failures`` of them, 200 after."""

    def __init__(self, failures: int = 0):
        self.failures, self.requests, self.accepted = failures, [], []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.requests.append((dict(self.headers), body))
                status = 500 if len(receiver.requests) <= receiver.failures else 200
                if status == 200:
                    receiver.accepted.append(body)
                self.send_response(status)
                self.end_headers()
                self.wfile.write(b"no thanks" if status == 500 else b"ok")

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/hook?from=citelab"

    def __enter__(self) -> Receiver:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


def verified(secret: str, headers: dict, body: bytes) -> dict:
    """What a receiver does: recompute the signature over ``"<timestamp>." + body`` and
    refuse a timestamp more than five minutes old; the body as JSON."""
    timestamp = int(headers["X-Citelab-Timestamp"])
    expected = "sha256=" + hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    assert hmac.compare_digest(headers["X-Citelab-Signature"], expected)
    assert abs(time.time() - timestamp) < 300
    return json.loads(body)


@pytest.fixture
def loopback(settings):
    """Tasks at once, no wait between attempts, and 127.0.0.1 allowed as a destination."""
    settings.CITELAB_TASKS_SYNC = True
    settings.CITELAB_WEBHOOK_RETRY_SECONDS = 0
    settings.CITELAB_WEBHOOK_ALLOW = ["public", "127.0.0.1/32"]


@pytest.fixture
def seed(db):
    """The seed run (5 claims, all cited) of project ``seed`` without its imported labels, lead
    ``lea`` and reviewer ``rob``."""
    from tests.conftest import FIXTURES_DIR

    project = project_for_import(slug="seed")
    run_import(project=project, source=FIXTURES_DIR / "seed_coverage_support.jsonl")
    Label.objects.all().delete()
    people = {}
    for name, role in (("lea", Role.LEAD), ("rob", Role.REVIEWER)):
        people[name] = ReviewerFactory(username=name)
        Membership.objects.create(project=project, reviewer=people[name], role=role)
    return Run.objects.get(project=project), people


def _label(claim: Claim, reviewer, value: str = "SUPPORTED"):
    current = claim.labels.filter(reviewer=reviewer, is_current=True).first()
    claim.refresh_from_db()
    return label_save(claim=claim, reviewer=reviewer, value=value, justification="no" if value == "UNSUPPORTED" else "",
                      base_revision=claim.revision, base_label_id=current.pk if current else None)


def test_a_saved_label_is_delivered_signed(seed, loopback, django_capture_on_commit_callbacks):
    run, people = seed
    claim = Claim.objects.filter(answer__run=run).order_by("answer__question_key", "index").first()
    with Receiver() as receiver:
        hook = webhook_create(project=run.project, url=receiver.url, events=["label.saved"], created_by=people["lea"])
        with django_capture_on_commit_callbacks(execute=True):
            _label(claim, people["rob"])
    assert len(receiver.requests) == 1
    headers, body = receiver.requests[0]
    payload = verified(hook.secret, headers, body)
    delivery = WebhookDelivery.objects.get()
    assert (headers["X-Citelab-Event"], headers["X-Citelab-Delivery"]) == ("label.saved", str(delivery.pk))
    assert (payload["event"], payload["project"], payload["run"], payload["id"]) == (
        "label.saved", "seed", run.name, delivery.pk)
    assert (payload["data"]["actor"], payload["data"]["claim_id"], payload["data"]["detail"]) == (
        "rob", claim.pk, {"value": "SUPPORTED", "previous": None})
    assert (delivery.status, delivery.attempts, delivery.response_status) == (DeliveryStatus.DELIVERED, 1, 200)
    # A tampered body no longer matches its signature.
    with pytest.raises(AssertionError):
        verified(hook.secret, headers, body.replace(b"SUPPORTED", b"UNSUPPORTED"))


def test_a_receiver_that_fails_twice_then_succeeds_gets_exactly_one_accepted_delivery(
        seed, loopback, django_capture_on_commit_callbacks):
    run, people = seed
    claim = Claim.objects.filter(answer__run=run).first()
    with Receiver(failures=2) as receiver:
        hook = webhook_create(project=run.project, url=receiver.url, events=["label.saved"], created_by=None)
        with django_capture_on_commit_callbacks(execute=True):
            _label(claim, people["rob"])
    assert len(receiver.requests) == 3 and len(receiver.accepted) == 1
    bodies = {body for _headers, body in receiver.requests}
    ids = {headers["X-Citelab-Delivery"] for headers, _body in receiver.requests}
    assert len(bodies) == 1 and len(ids) == 1  # the same delivery, re-signed at each attempt
    for headers, body in receiver.requests:
        verified(hook.secret, headers, body)
    delivery = WebhookDelivery.objects.get()
    assert (delivery.status, delivery.attempts, delivery.response_status, delivery.error) == (
        DeliveryStatus.DELIVERED, 3, 200, "")


def test_a_receiver_that_always_fails_is_given_up_after_six_attempts(seed, loopback,
                                                                     django_capture_on_commit_callbacks):
    run, people = seed
    with Receiver(failures=100) as receiver:
        webhook_create(project=run.project, url=receiver.url, events=["label.saved"], created_by=None)
        with django_capture_on_commit_callbacks(execute=True):
            _label(Claim.objects.filter(answer__run=run).first(), people["rob"])
    delivery = WebhookDelivery.objects.get()
    assert len(receiver.requests) == MAX_ATTEMPTS == 6
    assert (delivery.status, delivery.attempts, delivery.response_status, delivery.error) == (
        DeliveryStatus.FAILED, 6, 500, "no thanks")


def test_backoff_doubles_from_thirty_seconds(settings):
    settings.CITELAB_WEBHOOK_RETRY_SECONDS = 30
    assert [retry_delay(n) for n in range(1, MAX_ATTEMPTS)] == [30, 60, 120, 240, 480]


def test_an_allow_list_miss_is_refused_and_logged(seed, loopback, settings, django_capture_on_commit_callbacks):
    run, people = seed
    with Receiver() as receiver:
        webhook_create(project=run.project, url=receiver.url, events=["label.saved"], created_by=None)
        # The allow-list no longer has the loopback: the delivery is refused, nothing sent.
        settings.CITELAB_WEBHOOK_ALLOW = ["public"]
        with django_capture_on_commit_callbacks(execute=True):
            _label(Claim.objects.filter(answer__run=run).first(), people["rob"])
        with pytest.raises(ValidationError, match="resolves to 127.0.0.1, which CITELAB_WEBHOOK_ALLOW does not"):
            webhook_create(project=run.project, url=receiver.url, events=["label.saved"], created_by=None)
    assert receiver.requests == []
    delivery = WebhookDelivery.objects.get()
    assert delivery.status == DeliveryStatus.REFUSED and delivery.attempts == 1
    assert "127.0.0.1, which CITELAB_WEBHOOK_ALLOW does not allow" in delivery.error


@pytest.mark.parametrize(("url", "allow", "refused"), [
    ("http://127.0.0.1:8000/x", ["public"], "resolves to 127.0.0.1"),
    ("http://localhost/x", ["public"], "resolves to"),
    ("http://10.1.2.3/x", ["public"], "resolves to 10.1.2.3"),
    ("http://169.254.169.254/latest/meta-data", ["public"], "resolves to 169.254.169.254"),
    ("http://[::1]/x", ["public"], "resolves to ::1"),
    ("http://10.1.2.3/x", ["10.0.0.0/8"], ""),
    ("http://localhost/x", ["localhost"], ""),
    ("http://8.8.8.8/x", ["public"], ""),
    ("http://8.8.8.8/x", ["10.0.0.0/8"], "resolves to 8.8.8.8"),
    ("ftp://8.8.8.8/x", ["public"], "not an http(s) URL"),
    ("http://user:pw@8.8.8.8/x", ["public"], "user or password"),
])
def test_destinations_are_checked_against_the_allow_list(settings, url, allow, refused):
    settings.CITELAB_WEBHOOK_ALLOW = allow
    problem, _address = destination_problem(url)
    assert (refused in problem) if refused else problem == ""
    assert bool(problem) == bool(refused)


def test_versions_adjudications_and_a_fully_labeled_run_are_events(seed, loopback,
                                                                    django_capture_on_commit_callbacks):
    """The seed run has 5 cited claims: run.fully_labeled is sent once, with the fifth label, and
    not again for a relabel of the same claims; an adjudication and a version are sent too."""
    run, people = seed
    claims = list(Claim.objects.filter(answer__run=run).order_by("answer__question_key", "index"))
    assert len(claims) == 5
    with Receiver() as receiver:
        webhook_create(project=run.project, url=receiver.url, created_by=None,
                       events=["run.fully_labeled", "version.saved", "claim.adjudicated"])
        with django_capture_on_commit_callbacks(execute=True):
            for claim in claims[:4]:
                _label(claim, people["rob"])
        assert receiver.requests == []
        with django_capture_on_commit_callbacks(execute=True):
            _label(claims[4], people["rob"], "UNSUPPORTED")
        with django_capture_on_commit_callbacks(execute=True):
            _label(claims[4], people["rob"], "SUPPORTED")
        with django_capture_on_commit_callbacks(execute=True):
            claims[0].refresh_from_db()
            adjudication_save(claim=claims[0], lead=people["lea"], value="UNSUPPORTED", reason="partial")
        with django_capture_on_commit_callbacks(execute=True):
            label_table_snapshot(run=run, author=people["lea"], note="all labeled")
    events = [json.loads(body) for _headers, body in receiver.requests]
    assert [e["event"] for e in events] == ["run.fully_labeled", "claim.adjudicated", "version.saved"]
    assert events[0]["data"] | {"run_id": None} == {"run_id": None, "claims_version": run.claims_version,
                                                    "cited": 5, "supported": 4, "unsupported": 1, "support": 0.8}
    assert events[1]["data"]["claim_id"] == claims[0].pk and events[1]["data"]["actor"] == "lea"
    assert events[2]["data"]["target"] == "version 1"


def test_a_finished_judge_run_is_an_event(judging_run, loopback, django_capture_on_commit_callbacks):
    with Receiver() as receiver, JudgeServer() as judge:
        webhook_create(project=judging_run.project, url=receiver.url, events=["judge_run.finished"], created_by=None)
        judge_run = judge_run_create(run=judging_run, reviewer_name="judge-a",
                                     endpoint=JudgeEndpoint(model="fake", base_url=judge.base_url, timeout=1,
                                                            max_retries=0))
        with django_capture_on_commit_callbacks(execute=True):
            judge_run_execute(judge_run.pk, api_key="")
    (payload,) = [json.loads(body) for _headers, body in receiver.requests]
    assert payload["event"] == "judge_run.finished"
    assert payload["data"]["detail"]["judge_run"] == judge_run.pk and payload["data"]["detail"]["judge"] == "judge-a"


def test_a_failed_api_gate_is_an_event(seed, loopback, client, django_capture_on_commit_callbacks):
    """Run v2 of the seed (coverage 2/3 vs 5/5) fails the API gate: gate.failed is delivered."""
    from tests.conftest import FIXTURES_DIR

    run, people = seed
    run_import(project=run.project, source=FIXTURES_DIR / "seed_coverage_support_v2.jsonl")
    b = Run.objects.exclude(pk=run.pk).get(project=run.project)
    secret = token_create(project=run.project, reviewer=people["lea"], created_by=None, name="ci").secret
    with Receiver() as receiver:
        hook = webhook_create(project=run.project, url=receiver.url, events=["gate.failed"], created_by=None)
        with django_capture_on_commit_callbacks(execute=True):
            response = client.post(f"/api/v1/projects/seed/runs/{b.name}/gate",
                                   json.dumps({"baseline": run.name, "max_drop": {"coverage": 0.0}}),
                                   content_type="application/json", headers={"Authorization": f"Bearer {secret}"})
    assert response.status_code == 409
    (headers, body), = receiver.requests
    payload = verified(hook.secret, headers, body)
    assert payload["event"] == "gate.failed" and payload["run"] == b.name
    assert payload["data"]["failures"] == response.json()["failures"] and payload["data"]["token"] == "ci"


def test_the_page_registers_tests_and_removes_a_hook(seed, loopback, client, django_capture_on_commit_callbacks):
    run, people = seed
    client.force_login(people["lea"])
    with Receiver() as receiver:
        response = client.post("/p/seed/webhooks/", {"url": receiver.url, "events": ["label.saved", "gate.failed"]})
        assert response.status_code == 302
        hook = Webhook.objects.get()
        assert (hook.url, hook.events, hook.created_by) == (receiver.url, ["gate.failed", "label.saved"],
                                                            people["lea"])
        with django_capture_on_commit_callbacks(execute=True):
            tested = client.post(f"/p/seed/webhooks/{hook.pk}/test/")
        assert tested.status_code == 302
    (headers, body), = receiver.requests
    assert verified(hook.secret, headers, body)["event"] == "webhook.test"
    page = client.get("/p/seed/webhooks/")
    assert page.status_code == 200
    assert b"webhook.test" in page.content and b"Delivered" in page.content
    refused = client.post("/p/seed/webhooks/", {"url": "http://10.0.0.1/x", "events": ["label.saved"]})
    assert "resolves to 10.0.0.1" in refused.context["error"] and Webhook.objects.count() == 1
    assert "Choose at least one event" in client.post("/p/seed/webhooks/", {"url": receiver.url}).context["error"]
    assert client.post(f"/p/seed/webhooks/{hook.pk}/delete/").status_code == 302
    assert not Webhook.objects.exists() and not WebhookDelivery.objects.exists()
    client.force_login(people["rob"])
    assert client.get("/p/seed/webhooks/").status_code == 403
