"""Every URL, every role (SPEC §7): a walk of the whole URL resolver.

The walk enumerates every pattern of ``labeling.urls`` (the admin included)
and requests each one as nine actors:

- ``anonymous``;
- ``outsider``: logged in, member of no project;
- ``o_lead``, ``o_rev``, ``o_view``: lead, reviewer and viewer of the *other*
  project ``rival`` (they must not reach anything of ``team``);
- ``lead``, ``rev``, ``view``: lead, reviewer and viewer of project ``team``;
- ``super``: a superuser (a lead everywhere, and the admin's user).

Each URL is requested with the ids and names of project ``team`` (``own``),
then once more for each object in its path taken from project ``rival`` (a
run name, an answer id, a claim id, a version number that only ``rival``
has): ``/p/team/runs/<rival's run>/…``, ``/p/team/runs/r1/answers/<rival's
answer>/``… Those must answer 404 to everyone who reaches the view (403 where
the role check comes first and refuses anyway, 405 for a wrong method).
Rules may add cells with a query string or a POST body naming ``rival``'s
objects. GETs of pages with an htmx variant are requested a second time with
``HX-Request: true``.

Expected statuses are written one token per actor, in the order of
``ACTORS``: a number is the status; ``L`` is a redirect to the login page,
``AL`` to the admin's login page (302 with ``next``); ``R`` any other 302.
A URL name (or, for the admin's unnamed patterns, route) missing from
``RULES`` fails ``test_every_url_pattern_has_a_rule``: add a rule for a new
URL there. Every request runs in a savepoint that is rolled back, so a POST
(a delete, a rename) never changes what the next cell sees.

The HTTP API (``api:…``, SPEC §6) is walked the same way, each actor sending
``Authorization: Bearer`` with its own project token instead of a session:
``team`` tokens for ``lead``, ``rev``, ``view`` and ``super``, ``rival``
tokens for the ``o_*`` actors, and for ``outsider`` a ``team`` token whose
reviewer was removed from the project (401, like no token at all). Its rules
name every method of every operation (GET, POST, PATCH, DELETE):
``test_every_api_operation_has_a_rule`` reads them from the OpenAPI schema.
"""

from __future__ import annotations

import copy
import inspect
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from axes.models import AccessAttempt, AccessFailureLog, AccessLog
from django.contrib.auth.models import Group
from django.contrib.contenttypes.models import ContentType
from django.db import transaction
from django.test import Client, override_settings
from django.urls import URLPattern, URLResolver, get_resolver
from django.utils import timezone
from django_q.models import OrmQ, Schedule, Task

from labeling import models
from labeling.api.main import api
from labeling.integrations.tokens import token_create
from labeling.models import Membership, Role
from labeling.review.label_writes import label_save
from labeling.tables.versions import label_table_snapshot
from tests.factories import (
    AnswerFactory,
    CitationFactory,
    ClaimFactory,
    PassageFactory,
    ProjectFactory,
    QuestionFactory,
    ReviewerFactory,
    RunFactory,
)

ACTORS = ("anonymous", "outsider", "o_lead", "o_rev", "o_view", "lead", "rev", "view", "super")
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")

# -- the data: built once for the module, rolled back at its end -------------------------------


@dataclass
class World:
    """Project ``team`` (run ``r1``: answer ``q1`` with claims 1 and 2, each citing a
    passage, reviewer ``rev``'s label on claim 1, version 1) and project ``rival``
    (run ``rival-run``: its own answer and claims, versions 1 and 2)."""

    users: dict[str, models.Reviewer]
    own: dict[str, object]
    other: dict[str, object]
    objects: dict[str, object] = field(default_factory=dict)
    # actor → the API token it sends (none for ``anonymous``).
    tokens: dict[str, str] = field(default_factory=dict)


def _project(slug: str, run_name: str, people: dict[str, str], users: dict) -> dict:
    project = ProjectFactory(slug=slug, name=f"Project {slug}")
    for actor, role in people.items():
        Membership.objects.create(project=project, reviewer=users[actor], role=role)
    run = RunFactory(project=project, name=run_name)
    answer = AnswerFactory(run=run, question=QuestionFactory(project=project, question_id=f"{slug}-q1"),
                           text="The sky is blue. Grass is green.")
    first = ClaimFactory(answer=answer, index=1, text="The sky is blue.")
    second = ClaimFactory(answer=answer, index=2, text="Grass is green.")
    passage = PassageFactory(answer=answer, passage_id="P1", position=0, text="The sky is blue and grass is green.")
    CitationFactory(claim=first, passage=passage, position=0)
    CitationFactory(claim=second, passage=passage, position=0)
    return {"project": project, "run": run, "answer": answer, "claims": (first, second), "passage": passage}


_access = {"user_agent": "walk", "http_accept": "*/*", "path_info": "/login/"}


def _build() -> World:
    users = {actor: ReviewerFactory(username=f"walk-{actor}") for actor in ACTORS if actor != "anonymous"}
    users["super"].is_superuser = users["super"].is_staff = True
    users["super"].save()
    own = _project("team", "r1", {"lead": Role.LEAD, "rev": Role.REVIEWER, "view": Role.VIEWER}, users)
    other = _project("rival", "rival-run", {"o_lead": Role.LEAD, "o_rev": Role.REVIEWER, "o_view": Role.VIEWER},
                     users)
    label = label_save(claim=own["claims"][0], reviewer=users["rev"], value="SUPPORTED", justification="",
                       base_revision=1, base_label_id=None)
    judgment = models.CitationJudgment.objects.create(
        citation=own["claims"][0].citations.get(), reviewer=users["rev"], judgment=models.Judgment.FULL,
        claim_revision=1)
    own["label"] = label
    own["version"] = label_table_snapshot(run=own["run"], author=users["lead"], note="first")
    label_save(claim=other["claims"][0], reviewer=users["o_rev"], value="SUPPORTED", justification="",
                       base_revision=1, base_label_id=None)
    label_table_snapshot(run=other["run"], author=users["o_lead"], note="first")
    label_save(claim=other["claims"][1], reviewer=users["o_rev"], value="SUPPORTED", justification="",
                       base_revision=1, base_label_id=None)
    other["version"] = label_table_snapshot(run=other["run"], author=users["o_lead"], note="second")
    # Rival's gold claim (SPEC §4.4): no actor of team may unmark it.
    models.GoldClaim.objects.create(run=other["run"], claim=other["claims"][0], value="SUPPORTED", reason="rival",
                                    source=models.GoldSource.LABEL, lead=users["o_lead"], claim_revision=1)
    ReviewerFactory(username="walk-judge", kind=models.ReviewerKind.MODEL)
    group = Group.objects.create(name="walkers")
    now = timezone.now()
    done = Task.objects.create(id="walk-ok", name="walk-ok", func="math.floor", started=now, stopped=now,
                               success=True)
    failed = Task.objects.create(id="walk-failed", name="walk-failed", func="math.floor", started=now, stopped=now,
                                 success=False)
    # The object each admin change/delete/history URL names: one of project ``team``.
    objects = {
        "auth.group": group, "labeling.reviewer": users["rev"], "labeling.project": own["project"],
        "labeling.question": own["answer"].question, "labeling.run": own["run"], "labeling.answer": own["answer"],
        "labeling.claim": own["claims"][0], "labeling.label": label, "labeling.labeltableversion": own["version"],
        # rev's label on claim 1, as the audit log recorded it.
        "labeling.auditevent": models.AuditEvent.objects.get(project=own["project"], action="label"),
        "labeling.citationjudgment": judgment,
        # The task queue's (django-q2).
        "django_q.schedule": Schedule.objects.create(name="walk", func="math.floor"),
        "django_q.success": done, "django_q.failure": failed,
        "django_q.ormq": OrmQ.objects.create(key="citelab", payload="x"),
        # Login throttling's (django-axes).
        "axes.accessattempt": AccessAttempt.objects.create(username="walk-rev", ip_address="10.0.0.1",
                                                           failures_since_start=1, **_access),
        "axes.accesslog": AccessLog.objects.create(username="walk-rev", ip_address="10.0.0.1", **_access),
        "axes.accessfailurelog": AccessFailureLog.objects.create(username="walk-rev", ip_address="10.0.0.1",
                                                                 **_access),
    }
    tokens = {actor: token_create(project=(own if actor in ("lead", "rev", "view", "super") else other)["project"],
                                  reviewer=users[actor], created_by=None, name=f"walk-{actor}")
              for actor in ("lead", "rev", "view", "super", "o_lead", "o_rev", "o_view")}
    # A token made while ``outsider`` was a member of team, who then left: it opens nothing.
    gone = Membership.objects.create(project=own["project"], reviewer=users["outsider"], role=Role.REVIEWER)
    tokens["outsider"] = token_create(project=own["project"], reviewer=users["outsider"], created_by=None,
                                      name="walk-outsider")
    gone.delete()
    own["token"], other["token"] = tokens["lead"].token, tokens["o_lead"].token
    judge = models.Reviewer.objects.get(username="walk-judge")
    for side in (own, other):
        # Its destination is not resolved here (rows made directly): the walk never delivers.
        side["webhook"] = models.Webhook.objects.create(project=side["project"], url="https://hooks.example.org/x",
                                                        events=["label.saved"], secret="walk")
        side["judge_run"] = models.JudgeRun.objects.create(run=side["run"], reviewer=judge, model="walk",
                                                           status=models.JudgeRunStatus.DONE)
    return World(users=users, own=own, other=other, objects=objects,
                 tokens={actor: issued.secret for actor, issued in tokens.items()})


@pytest.fixture(scope="module")
def world(django_db_setup, django_db_blocker, tmp_path_factory):
    """The walk's data, created once in a transaction that is rolled back after the module."""
    with django_db_blocker.unblock(), override_settings(MEDIA_ROOT=tmp_path_factory.mktemp("walk-media")):
        with transaction.atomic():
            yield _build()
            transaction.set_rollback(True)


# -- the rules ------------------------------------------------------------------------------------

# Shorthands for rows every actor shares.
# A page of project team: members read it, nobody else finds it.
TEAM_READ = "L 404 404 404 404 200 200 200 200"
TEAM_LEAD_ONLY = "L 404 404 404 404 200 403 403 200"
# The reviewer dashboards: leads and viewers, never the reviewers they grade.
TEAM_QUALITY = "L 404 404 404 404 200 403 200 200"
POST_ONLY = "L 405 405 405 405 405 405 405 405"
GET_ONLY = "L 405 405 405 405 405 405 405 405"


def _own(world: World) -> dict[str, object]:
    own = world.own
    return {"project_slug": own["project"].slug, "run_name": own["run"].name, "answer_id": own["answer"].pk,
            "claim_id": own["claims"][0].pk, "number": own["version"].number, "token_id": own["token"].pk,
            "slug": own["project"].slug, "run": own["run"].name, "judge_run_id": own["judge_run"].pk,
            "hook_id": own["webhook"].pk}


def _other(world: World) -> dict[str, object]:
    other = world.other
    return {"run_name": other["run"].name, "answer_id": other["answer"].pk, "claim_id": other["claims"][0].pk,
            "number": other["version"].number, "token_id": other["token"].pk, "run": other["run"].name,
            "judge_run_id": other["judge_run"].pk, "hook_id": other["webhook"].pk}


@dataclass(frozen=True)
class Cell:
    """One request of the walk and the status each actor must get."""

    key: str
    variant: str
    method: str
    url: str
    expected: tuple[str, ...]
    data: dict | bytes | None = None
    htmx: bool = False
    # An API cell: sent with the actor's bearer token, its body as JSON (or raw bytes).
    api: bool = False
    # (world, response) -> "" or what went wrong, checked before the cell is rolled back
    check: Callable[[World, Any], str] | None = None


def _claim_bodies(world: World) -> dict[str, dict]:
    first, second = world.own["claims"]
    return {
        "claim_label": {"value": "SUPPORTED", "justification": "", "revision": first.revision, "claim": first.pk},
        "claim_split": {"first": "The sky", "second": "is blue.", "revision": first.revision,
                        "first_citations": [c.pk for c in first.citations.all()],
                        "second_citations": [c.pk for c in first.citations.all()]},
        "claim_merge": {"other": second.pk, "revision": first.revision},
        "claim_edit": {"text": "The sky is often blue.", "revision": first.revision},
    }


def _rival_claim(world: World) -> int:
    return world.other["claims"][0].pk


def _no_assignment_of_rival(world: World, response) -> str:
    return "a reviewer of rival was assigned" if models.Assignment.objects.filter(
        reviewer=world.users["o_rev"]).exists() else ""


def _no_adjudication(world: World, response) -> str:
    return "an adjudication was saved" if models.Adjudication.objects.exists() else ""


def _rival_gold_kept(world: World, response) -> str:
    return "" if models.GoldClaim.objects.filter(claim=world.other["claims"][0], is_current=True).exists() else (
        "rival's gold claim was unmarked")


def _stays_on_site(world: World, response) -> str:
    location = response.get("Location", "")
    return f"redirected off the site to {location}" if "evil.example" in location else ""


def _no_send_back_to_rival(world: World, response) -> str:
    return "a label was sent back to rival's reviewer" if models.SendBack.objects.filter(
        reviewer=world.users["o_rev"]).exists() else ""


def _claims_unmerged(world: World, response) -> str:
    counts = [models.Claim.objects.filter(answer=side["answer"]).count() for side in (world.own, world.other)]
    return "" if counts == [2, 2] else f"claims per answer now {counts}"


def _rival_not_shown(world: World, response) -> str:
    body = b"".join(response.streaming_content) if response.streaming else response.content
    return "rival's run is in the response" if world.other["answer"].text.encode() in body else ""


RULES = {
    # Log in and out: open to everyone.
    "login": {"GET": "200 200 200 200 200 200 200 200 200", "POST": "200 200 200 200 200 200 200 200 200",
              "data": lambda w: {"username": "walk-lead", "password": "wrong"}},
    "logout": {"GET": "405 405 405 405 405 405 405 405 405", "POST": "R R R R R R R R R"},
    # The help pages (templates/docs/*.md): open to everyone, read only.
    "docs_index": {"GET": "200 200 200 200 200 200 200 200 200", "POST": "405 405 405 405 405 405 405 405 405"},
    "docs_page": {"GET": "200 200 200 200 200 200 200 200 200", "POST": "405 405 405 405 405 405 405 405 405",
                  "values": lambda w: {"name": "judges"}},
    "project_list": {"GET": "L 200 200 200 200 200 200 200 200", "POST": POST_ONLY},
    "project_detail": {"GET": TEAM_READ, "POST": POST_ONLY},
    "project_summary": {"GET": TEAM_READ, "POST": POST_ONLY},
    "project_members": {"GET": TEAM_LEAD_ONLY, "POST": "L 404 404 404 404 R 403 403 R",
                        "data": lambda w: {"reviewer": "walk-view", "role": "reviewer"}},
    "project_settings": {"GET": TEAM_LEAD_ONLY, "POST": "L 404 404 404 404 R 403 403 R",
                         "data": lambda w: {"judge_citations": "on"}},
    "run_detail": {"GET": TEAM_READ, "HX": True, "POST": POST_ONLY},
    "run_rename": {"GET": GET_ONLY, "POST": "L 404 404 404 404 R 403 403 R",
                   "data": lambda w: {"name": "r1-renamed"}},
    "run_delete": {"GET": TEAM_LEAD_ONLY, "POST": "L 404 404 404 404 R 403 403 R"},
    # The reviewer's next claim: a redirect to it, or (htmx) the review fragment.
    "run_next": {"GET": "L 404 404 404 404 R R R R", "HX": TEAM_READ, "POST": POST_ONLY},
    "run_progress": {"GET": TEAM_READ, "HX": True, "POST": POST_ONLY},
    "run_scatter": {"GET": TEAM_READ, "HX": True, "POST": POST_ONLY},
    "run_summary": {"GET": TEAM_READ, "HX": True, "POST": POST_ONLY},
    "run_gold": {"GET": TEAM_READ, "HX": True, "POST": POST_ONLY},
    "run_agreement": {"GET": TEAM_READ, "POST": POST_ONLY},
    "run_reviewers": {
        "GET": TEAM_READ, "POST": "L 404 404 404 404 R 403 403 R",
        "data": lambda w: {"overlap": "2", "blind": "auto", "assigned": ["walk-rev"]},
        "extra": lambda w: [("assigning rival's reviewer", "POST",
                             {"overlap": "1", "blind": "auto", "assigned": ["walk-o_rev"]},
                             "L 404 404 404 404 R 403 403 R", _no_assignment_of_rival)]},
    "run_adjudicate": {
        "GET": TEAM_LEAD_ONLY, "POST": TEAM_LEAD_ONLY,
        "data": lambda w: {"claim": str(w.own["claims"][0].pk), "value": "SUPPORTED", "reason": "walk"},
        "extra": lambda w: [("rival's claim", "POST",
                             {"claim": str(_rival_claim(w)), "value": "SUPPORTED", "reason": "walk"},
                             TEAM_LEAD_ONLY, _no_adjudication)]},
    "label_undo": {"GET": GET_ONLY, "POST": "L 404 404 404 404 R R 403 R"},
    "answer_review": {"GET": TEAM_READ, "HX": True, "POST": POST_ONLY},
    "claim_label": {"GET": GET_ONLY, "POST": "L 404 404 404 404 R R 403 R",
                    "data": lambda w: _claim_bodies(w)["claim_label"]},
    # The next claim held ready for the page (nothing reserved): those who may label the run.
    "claim_next": {"GET": "L 404 404 404 404 200 200 403 200", "POST": POST_ONLY},
    "claim_split": {"GET": "L 404 404 404 404 200 200 403 200", "HX": True,
                    "POST": "L 404 404 404 404 R R 403 R", "data": lambda w: _claim_bodies(w)["claim_split"]},
    "claim_merge": {
        "GET": GET_ONLY, "POST": "L 404 404 404 404 R R 403 R", "data": lambda w: _claim_bodies(w)["claim_merge"],
        "extra": lambda w: [("merging with rival's claim", "POST",
                             {"other": _rival_claim(w), "revision": w.own["claims"][0].revision},
                             "L 404 404 404 404 200 200 403 200", _claims_unmerged)]},
    # A judging form without its fields: shown again with the reason, nothing saved.
    "claim_judge": {"GET": GET_ONLY, "POST": "L 404 404 404 404 200 200 403 200"},
    "claim_factual": {"GET": GET_ONLY, "POST": "L 404 404 404 404 R R 403 R",
                      "data": lambda w: {"factual": "0", "revision": w.own["claims"][0].revision}},
    "run_audit": {"GET": TEAM_LEAD_ONLY, "POST": POST_ONLY},
    # Reviewer quality (SPEC §4.4): guidelines (members read, leads write), dashboards (leads and viewers),
    # gold checks and the lead's actions on a claim, a reviewer's reply to a send-back.
    "project_guidelines": {"GET": TEAM_READ, "POST": "L 404 404 404 404 R 403 403 R",
                           "data": lambda w: {"text": "# Rules\n\nPartial support is UNSUPPORTED."}},
    "project_dashboard": {"GET": TEAM_QUALITY, "POST": POST_ONLY},
    "run_dashboard": {"GET": TEAM_QUALITY, "POST": POST_ONLY},
    "run_gold_checks": {"GET": TEAM_LEAD_ONLY, "POST": "L 404 404 404 404 R 403 403 R",
                        "data": lambda w: {"action": "settings", "gold_rate": "5"},
                        "extra": lambda w: [("unmarking rival's claim", "POST",
                                             {"action": "unmark", "claim": str(_rival_claim(w))},
                                             "L 404 404 404 404 R 403 403 R", _rival_gold_kept)]},
    # The lead's own label is missing: refused with a message, redirected back, nothing marked.
    "claim_gold": {"GET": GET_ONLY, "POST": "L 404 404 404 404 R 403 403 R",
                   "data": lambda w: {"source": "label", "reason": "walk"}},
    "claim_send_back": {
        "GET": GET_ONLY, "POST": "L 404 404 404 404 R 403 403 R",
        "data": lambda w: {"reviewer": "walk-rev", "comment": "walk", "next": "https://evil.example/"},
        "extra": lambda w: [("next off the site", "POST",
                             {"reviewer": "walk-rev", "comment": "walk", "next": "https://evil.example/"},
                             "L 404 404 404 404 R 403 403 R", _stays_on_site),
                            ("rival's reviewer", "POST", {"reviewer": "walk-o_rev", "comment": "walk"},
                             "L 404 404 404 404 R 403 403 R", _no_send_back_to_rival)]},
    # Nothing of theirs is sent back: the review again with the reason, nothing written.
    "claim_reply": {"GET": GET_ONLY, "POST": "L 404 404 404 404 200 200 403 200",
                    "data": lambda w: {"reply": "walk"}},
    "run_judges": {"GET": TEAM_READ, "HX": True, "POST": POST_ONLY},
    # Without a judge name and model: refused with a message on the run page.
    "judge_run_start": {"GET": GET_ONLY, "POST": "L 404 404 404 404 R 403 403 R"},
    # A lead promotes or demotes a judge, or orders the queue by one: redirects with the outcome.
    "run_judge_promote": {"GET": GET_ONLY, "POST": "L 404 404 404 404 R 403 403 R",
                          "data": lambda w: {"judge": "walk-judge"}},
    "run_queue_judge": {"GET": GET_ONLY, "POST": "L 404 404 404 404 R 403 403 R",
                        "data": lambda w: {"judge": "walk-judge"}},
    "judge_grade": {"GET": TEAM_READ, "POST": POST_ONLY, "values": lambda w: {"judge_name": "walk-judge"}},
    # The probability sample and its estimates (SPEC §4.6): a lead draws it and sets its target.
    "run_sample": {"GET": TEAM_READ, "HX": True, "POST": POST_ONLY},
    "run_sample_draw": {"GET": GET_ONLY, "POST": "L 404 404 404 404 R 403 403 R",
                        "data": lambda w: {"answers": "1", "seed": "3"}},
    "run_sample_target": {"GET": GET_ONLY, "POST": "L 404 404 404 404 R 403 403 R",
                          "data": lambda w: {"target": "0.05"}},
    "claim_edit": {"GET": "L 404 404 404 404 200 200 403 200", "HX": True,
                   "POST": "L 404 404 404 404 R R 403 R", "data": lambda w: _claim_bodies(w)["claim_edit"]},
    "version_list": {"GET": TEAM_READ, "HX": True, "POST": POST_ONLY},
    "version_create": {"GET": GET_ONLY, "POST": "L 404 404 404 404 R 403 403 R",
                       "data": lambda w: {"note": "walk"}},
    "version_diff": {"GET": TEAM_READ, "HX": True, "POST": POST_ONLY,
                     "extra": lambda w: [("rival's version number", "GET", {"old": "1", "new": "2"}, TEAM_READ,
                                          _rival_not_shown)]},
    "version_file": {"GET": TEAM_READ, "POST": POST_ONLY},
    "label_export": {
        "GET": TEAM_READ, "POST": POST_ONLY,
        "extra": lambda w: [("csv", "GET", {"format": "csv"}, TEAM_READ, _rival_not_shown),
                            ("rival's version number", "GET", {"version": "2", "format": "csv"},
                             "L 404 404 404 404 404 404 404 404", None)]},
    "label_import": {"GET": TEAM_LEAD_ONLY, "POST": TEAM_LEAD_ONLY, "HX": True},
    "label_import_apply": {"GET": GET_ONLY, "POST": "L 404 404 404 404 R 403 403 R",
                           "data": lambda w: {"token": "forged"}},
    "run_compare": {
        "GET": TEAM_READ, "POST": POST_ONLY,
        "extra": lambda w: [("rival's run as B", "GET", {"a": "r1", "b": w.other["run"].name}, TEAM_READ,
                             _rival_not_shown)]},
    # Without two runs of the project to compare: 400.
    "run_compare_xlsx": {
        "GET": "L 404 404 404 404 400 400 400 400", "POST": POST_ONLY,
        "extra": lambda w: [("rival's run as B", "GET", {"a": "r1", "b": w.other["run"].name},
                             "L 404 404 404 404 400 400 400 400", _rival_not_shown)]},
}

# -- the HTTP API (SPEC §6) and its tokens page --------------------------------------------------

# Token of no project or none at all: 401; a rival token: team's objects are 404 to it.
API_READ = "401 401 404 404 404 200 200 200 200"
API_LEAD = "401 401 404 404 404 200 403 403 200"
API_PUBLIC = "200 200 200 200 200 200 200 200 200"
API_405 = "405 405 405 405 405 405 405 405 405"


def _api_answers(world: World) -> bytes:
    """A one-answer JSON Lines file for run r1 of team (a new question: imported, 201)."""
    return (json.dumps({"question_id": "walk-api-q", "question": "Is the sky blue?", "run": "r1",
                        "answer": "The sky is blue [P1].",
                        "passages": [{"id": "P1", "source": "sky.txt", "text": "The sky is blue."}]}) + "\n").encode()


def _nothing_listed(world: World, response) -> str:
    """A 200 list of team's that names another project's object must come back empty."""
    if response.status_code != 200:
        return ""
    count = response.json()["count"]
    return f"{count} item(s) of rival listed" if count else ""


RULES |= {
    # The lead's page of the project's API tokens; creating one shows it once (200), revoking redirects.
    "project_tokens": {"GET": TEAM_LEAD_ONLY, "POST": TEAM_LEAD_ONLY,
                       "data": lambda w: {"reviewer": "walk-rev", "days": "30"}},
    "project_token_revoke": {"GET": "L 405 405 405 405 405 405 405 405", "POST": "L 404 404 404 404 R 403 403 R"},
    # Single sign-on is off here (no CITELAB_OIDC_CLIENT_ID): both are 404 to everyone.
    "sso_login": {"GET": "404 404 404 404 404 404 404 404 404", "POST": "404 404 404 404 404 404 404 404 404"},
    "sso_callback": {"GET": "404 404 404 404 404 404 404 404 404"},
    # A lead's page of the project's webhooks; the loopback is not an allowed destination (200, refused).
    "project_webhooks": {"GET": TEAM_LEAD_ONLY, "POST": TEAM_LEAD_ONLY,
                         "data": lambda w: {"url": "http://127.0.0.1:9/hook", "events": ["label.saved"]}},
    # The test delivery is queued once the request commits (never in the walk): a redirect.
    "project_webhook_test": {"GET": "L 405 405 405 405 405 405 405 405", "POST": "L 404 404 404 404 R 403 403 R"},
    "project_webhook_delete": {"GET": "L 405 405 405 405 405 405 405 405", "POST": "L 404 404 404 404 R 403 403 R"},
    # The schema and its docs page are public (they describe the API, they hold no data).
    "api:openapi-json": {"GET": API_PUBLIC, "POST": API_405},
    "api:openapi-view": {"GET": API_PUBLIC, "POST": API_405},
    # django-ninja's root: no page of its own.
    "api:api-root": {"GET": "404 404 404 404 404 404 404 404 404"},
    # A rival token lists its own project; outsider's token (reviewer no longer a member) opens nothing.
    "api:project_list": {"GET": "401 401 200 200 200 200 200 200 200", "POST": API_405},
    "api:project_detail": {"GET": API_READ, "PUT": API_405},
    "api:run_list": {"GET": API_READ, "PUT": API_405},
    "api:run_create": {"POST": "401 401 404 404 404 201 403 403 201", "data": lambda w: {"name": "walk-new"}},
    "api:run_detail": {"GET": API_READ, "PUT": API_405},
    "api:run_rename": {"PATCH": API_LEAD, "data": lambda w: {"name": "r1-renamed"}},
    "api:run_delete": {"DELETE": API_LEAD},
    "api:answers_import": {"POST": "401 401 404 404 404 201 403 403 201", "GET": API_405, "data": _api_answers},
    "api:claim_list": {
        "GET": API_READ, "POST": API_405,
        "extra": lambda w: [("question of rival", "GET", {"question_id": "rival-q1"}, API_READ, _nothing_listed)]},
    "api:claim_detail": {"GET": API_READ, "DELETE": API_405},
    # Claim 2 of team (no label yet): a reviewer's or lead's first label, 201.
    "api:label_create": {"POST": "401 401 404 404 404 201 201 403 201", "GET": API_405,
                         "values": lambda w: {"claim_id": w.own["claims"][1].pk},
                         "data": lambda w: {"value": "SUPPORTED", "justification": "", "revision": 1,
                                            "base_label": None}},
    "api:label_list": {
        "GET": API_READ, "POST": API_405,
        "extra": lambda w: [("run of rival", "GET", {"run": "rival-run"}, API_READ, _nothing_listed),
                            ("reviewer of rival", "GET", {"reviewer": "walk-o_rev"}, API_READ, _nothing_listed)]},
    "api:version_list": {"GET": API_READ, "PUT": API_405},
    # Version 1 holds the table as it is: a second one is refused as unchanged (409).
    "api:version_create": {"POST": "401 401 404 404 404 409 403 403 409", "data": lambda w: {"note": "walk"}},
    "api:version_detail": {"GET": API_READ, "POST": API_405},
    "api:version_file": {"GET": API_READ, "POST": API_405},
    "api:run_score": {"GET": API_READ, "POST": API_405},
    # Team has one run: no baseline to gate against (422, naming the field).
    "api:run_gate": {
        "POST": "401 401 404 404 404 422 422 422 422", "GET": API_405,
        "data": lambda w: {"baseline": "r0", "max_drop": {"support": 0.05}},
        "extra": lambda w: [("rival's run as baseline", "POST",
                             {"baseline": w.other["run"].name, "max_drop": {"support": 0.05}},
                             "401 401 404 404 404 422 422 422 422", _rival_not_shown)]},
    "api:run_compare": {
        "GET": "401 401 404 404 404 422 422 422 422", "POST": API_405, "query": lambda w: {"a": "r1", "b": "r1"},
        "extra": lambda w: [("rival's run as B", "GET", {"a": "r1", "b": w.other["run"].name},
                             "401 401 404 404 404 422 422 422 422", _rival_not_shown)]},
    "api:run_agreement": {"GET": API_READ, "POST": API_405},
    "api:judge_run_list": {"GET": API_READ, "PUT": API_405},
    # Recorded and queued (the queue runs it once the request commits: never in the walk).
    "api:judge_run_start": {"POST": "401 401 404 404 404 202 403 403 202",
                             "data": lambda w: {"judge": "walk-judge", "model": "walk-model"}},
    "api:judge_run_detail": {"GET": API_READ, "POST": API_405},
    "api:audit_list": {
        "GET": API_LEAD, "POST": API_405,
        "extra": lambda w: [("run of rival", "GET", {"run": "rival-run"}, API_LEAD, _nothing_listed)]},
}


# The admin: staff only (nobody here but ``super`` is staff). Per registered model,
# what a superuser gets on its add, change and delete pages (view-only models: 403
# on add and delete, the change page shows the object read-only).
ADMIN_MODELS = {
    "auth.group": ("200", "200", "200"),
    "labeling.reviewer": ("200", "200", "200"),
    "labeling.project": ("200", "200", "200"),
    "labeling.question": ("200", "200", "200"),
    "labeling.run": ("200", "200", "200"),
    "labeling.answer": ("200", "200", "200"),
    "labeling.claim": ("403", "200", "403"),
    "labeling.label": ("403", "200", "403"),
    "labeling.labeltableversion": ("403", "200", "403"),
    "labeling.auditevent": ("403", "200", "403"),
    "labeling.citationjudgment": ("403", "200", "403"),
    "django_q.schedule": ("200", "200", "200"),
    "django_q.success": ("403", "200", "200"),
    "django_q.failure": ("403", "200", "200"),
    "django_q.ormq": ("403", "200", "200"),
    "axes.accessattempt": ("403", "200", "200"),
    "axes.accesslog": ("403", "200", "200"),
    "axes.accessfailurelog": ("403", "200", "200"),
}


def _admin_object(model: str):
    return lambda w: {"object_id": w.objects[model].pk}


def _staff(token: str) -> str:
    return f"AL AL AL AL AL AL AL AL {token}"


for _model, (_add, _change, _delete) in ADMIN_MODELS.items():
    _app, _name = _model.split(".")
    _prefix = f"admin:{_app}_{_name}"
    RULES[f"{_prefix}_changelist"] = {"GET": _staff("200")}
    RULES[f"{_prefix}_add"] = {"GET": _staff(_add)}
    RULES[f"{_prefix}_change"] = {"GET": _staff(_change), "values": _admin_object(_model)}
    RULES[f"{_prefix}_delete"] = {"GET": _staff(_delete), "values": _admin_object(_model)}
    RULES[f"{_prefix}_history"] = {"GET": _staff("200"), "values": _admin_object(_model)}
    # ``<id>/`` alone redirects to the change page.
    RULES[f"admin/{_app}/{_name}/<path:object_id>/"] = {"GET": _staff("R"), "values": _admin_object(_model)}

RULES |= {
    "admin:index": {"GET": _staff("200")},
    "admin:login": {"GET": "200 200 200 200 200 200 200 200 R", "POST": "200 200 200 200 200 200 200 200 200",
                    "data": lambda w: {"username": "walk-lead", "password": "wrong"}},
    "admin:logout": {"GET": "R R R R R R R R 405", "POST": "R R R R R R R R R"},
    "admin:password_change": {"GET": _staff("200")},
    "admin:password_change_done": {"GET": _staff("200")},
    "admin:autocomplete": {"GET": _staff("403")},
    "admin:jsi18n": {"GET": _staff("200")},
    "admin:view_on_site": {"GET": _staff("R"), "values": lambda w: {
        "content_type_id": ContentType.objects.get_for_model(models.Run).pk, "object_id": w.own["run"].pk}},
    "admin:auth_user_password_change": {"GET": _staff("200"), "values": lambda w: {"id": w.users["rev"].pk}},
    "admin:app_list": {"GET": _staff("200"), "path": lambda w: "/admin/labeling/"},
    # django_q's admin has its own app list too.
    "admin/(?P<url>.*)$": {"GET": _staff("404"), "path": lambda w: "/admin/no-such-page/"},
}


# -- the walk -------------------------------------------------------------------------------------

_PARAM = re.compile(r"<(?:(?P<conv>[^>:]+):)?(?P<name>[^>]+)>")


def url_patterns() -> list[tuple[str, str]]:
    """``(key, route)`` of every pattern of the root URLconf, in order: the key is
    the pattern's name (``admin:``-prefixed in the admin), or its full route when
    it has none."""
    found: list[tuple[str, str]] = []

    def walk(patterns, prefix: str, namespace: str) -> None:
        for pattern in patterns:
            route = prefix + str(pattern.pattern)
            if isinstance(pattern, URLResolver):
                inner = f"{namespace}{pattern.namespace}:" if pattern.namespace else namespace
                walk(pattern.url_patterns, route, inner)
            elif isinstance(pattern, URLPattern):
                found.append((f"{namespace}{pattern.name}" if pattern.name else route, route))

    walk(get_resolver().url_patterns, "", "")
    return found


def _fill(route: str, values: dict[str, object]) -> str:
    """The URL of ``route`` with its ``<conv:name>`` parameters replaced by ``values``."""
    return "/" + _PARAM.sub(lambda m: str(values[m.group("name")]), route)


def _tokens(row: str) -> tuple[str, ...]:
    tokens = tuple(row.split())
    assert len(tokens) == len(ACTORS), f"{row!r}: one token per actor {ACTORS}"
    return tokens


def _cross(token: str, param: str) -> str:
    """What an actor gets when ``param`` names an object of project ``rival``: the
    login redirect, a refused token or method or (below the run) a refused role
    stay as they were; everything else is 404."""
    if token in ("L", "AL", "401", "405") or (token == "403" and param not in ("run_name", "run")):
        return token
    return "404"


def cells(world: World) -> list[Cell]:
    """Every request of the walk, built from the resolver and ``RULES``."""
    own, other = _own(world), _other(world)
    out: list[Cell] = []
    for key, route in url_patterns():
        rule = RULES.get(key)
        if rule is None:
            continue
        values = {**own, **rule.get("values", lambda w: {})(world)}
        url = rule["path"](world) if "path" in rule else _fill(route, values)
        query = rule.get("query", lambda w: {})(world)
        api_cell = key.startswith("api:")
        for method in METHODS:
            if method not in rule:
                continue
            expected = _tokens(rule[method])
            data = rule.get("data", lambda w: {})(world) if method != "GET" else query
            out.append(Cell(key, "own", method, url, expected, data, api=api_cell))
            if method == "GET" and rule.get("HX"):
                hx = expected if rule["HX"] is True else _tokens(rule["HX"])
                out.append(Cell(key, "own, htmx", method, url, hx, data, htmx=True))
            if "path" in rule:
                continue
            for param in _PARAM.findall(route):
                name = param[1]
                if name in other:
                    crossed = tuple(_cross(token, name) for token in expected)
                    out.append(Cell(key, f"{name} of rival", method, _fill(route, {**values, name: other[name]}),
                                    crossed, data, api=api_cell))
        for variant, method, data, row, check in rule.get("extra", lambda w: [])(world):
            out.append(Cell(key, variant, method, url, _tokens(row), data, check=check, api=api_cell))
    return out


def _client_for(world: World, actor: str) -> Client:
    client = Client(raise_request_exception=False)
    if actor != "anonymous":
        client.force_login(world.users[actor])
    return client


def _token_of(response) -> str:
    if response.status_code == 302:
        location = response["Location"]
        if location.startswith("/admin/login/?next="):
            return "AL"
        if location.startswith("/login/?next="):
            return "L"
        return "R"
    return str(response.status_code)


def test_every_api_operation_has_a_rule():
    """Every operation of the OpenAPI schema (path × method) has its rule: the
    walk covers every API route and method (SPEC §6)."""
    schema = api.get_openapi_schema(path_prefix="/api/v1/")
    operations = [(operation["operationId"], method.upper(), path)
                  for path, methods in schema["paths"].items() for method, operation in methods.items()]
    assert len(operations) >= 20
    missing = [f"{method} {path} (api:{name})" for name, method, path in operations
               if method not in RULES.get(f"api:{name}", {})]
    assert not missing, "add the method to the API rule in RULES:\n" + "\n".join(missing)


def test_claim_bodies_are_bodies_not_rules():
    """A merge once pasted eight rules into ``_claim_bodies``, where the walk never
    reads them: every entry there is a POST body of a rule that uses it."""
    for name in ("claim_label", "claim_split", "claim_merge", "claim_edit"):
        assert "POST" in RULES[name]
    source = inspect.getsource(_claim_bodies)
    assert '"GET"' not in source and '"POST"' not in source


def test_every_url_pattern_has_a_rule():
    """A URL added without a rule here fails: say what each actor must get."""
    missing = [f"{key}  ({route})" for key, route in url_patterns() if key not in RULES]
    assert not missing, ("add a rule to RULES in tests/test_url_walk.py for each new URL "
                         "(the status every actor must get):\n" + "\n".join(missing))
    assert not set(RULES) - {key for key, _ in url_patterns()}, "rules for URLs that no longer exist"


@pytest.mark.parametrize("actor", ACTORS)
def test_every_url_answers_each_actor_as_its_rule_says(world, actor, db):
    """Each cell as ``actor``: the status its rule gives (never a 500, never a 200
    on another project's object). Each request is rolled back."""
    column = ACTORS.index(actor)
    client = _client_for(world, actor)
    cookies = copy.deepcopy(client.cookies)
    wrong = []
    walked = cells(world)
    for cell in walked:
        client.cookies = copy.deepcopy(cookies)  # a logout in a previous cell logs nobody out
        headers = {"HX-Request": "true"} if cell.htmx else {}
        if cell.api and actor in world.tokens:
            headers["Authorization"] = f"Bearer {world.tokens[actor]}"
        with transaction.atomic():
            if cell.method == "GET":
                response = client.get(cell.url, cell.data, headers=headers)
            elif cell.api:
                raw = isinstance(cell.data, bytes)
                response = client.generic(cell.method, cell.url, cell.data if raw else json.dumps(cell.data or {}),
                                          "application/x-ndjson" if raw else "application/json", headers=headers)
            else:
                response = client.post(cell.url, cell.data, headers=headers)
            problem = cell.check(world, response) if cell.check else ""
            transaction.set_rollback(True)
        got = _token_of(response)
        where = f"{cell.key} [{cell.variant}] {cell.method} {cell.url}"
        if got != cell.expected[column]:
            wrong.append(f"{where}: expected {cell.expected[column]}, got {got}")
        if problem:
            wrong.append(f"{where}: {problem}")
    assert len(walked) > 100
    assert not wrong, f"{len(wrong)} of {len(walked)} cells wrong for {actor}:\n" + "\n".join(wrong)
