"""Project tokens (SPEC §6): made by a lead (page or ``create_token``),
shown once, stored hashed, capped by the member's role, expiring, revocable,
listed with their last use, and rate limited."""

from __future__ import annotations

import hashlib
import io
from datetime import timedelta

import pytest
from django.core.cache import cache
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone

from labeling.api import main
from labeling.integrations.tokens import (
    TokenRefused,
    member_role,
    project_tokens,
    token_authenticate,
    token_create,
    token_revoke,
)
from labeling.models import ApiToken, Membership, ReviewerKind, Role
from tests.factories import ProjectFactory, ReviewerFactory


@pytest.fixture
def team(db):
    """Project ``team`` with lead ``lea``, reviewer ``rob`` and viewer ``vic``."""
    project = ProjectFactory(slug="team")
    people = {}
    for name, role in (("lea", Role.LEAD), ("rob", Role.REVIEWER), ("vic", Role.VIEWER)):
        people[name] = ReviewerFactory(username=name)
        Membership.objects.create(project=project, reviewer=people[name], role=role)
    return project, people


def _get(client, secret: str, url: str = "/api/v1/projects"):
    return client.get(url, headers={"Authorization": f"Bearer {secret}"})


def test_token_is_stored_as_its_sha256_only(team):
    project, people = team
    issued = token_create(project=project, reviewer=people["rob"], created_by=people["lea"], name="ci")
    row = ApiToken.objects.get()
    assert issued.secret.startswith("clt_") and len(issued.secret) == 4 + 43
    assert row.digest == hashlib.sha256(issued.secret.encode()).hexdigest()
    assert row.prefix == issued.secret[:12]
    # The secret itself is in no column.
    assert issued.secret not in repr(list(ApiToken.objects.values()))
    assert (row.name, row.role, row.reviewer, row.created_by) == ("ci", Role.REVIEWER, people["rob"], people["lea"])
    # 90 days by default.
    assert timedelta(days=89, hours=23) < row.expires_at - timezone.now() <= timedelta(days=90)


def test_create_token_prints_the_token_alone_on_the_last_line(team, client):
    out, err = io.StringIO(), io.StringIO()
    call_command("create_token", "--reviewer", "rob", "--project", "team", "--expires-days", "7", stdout=out,
                 stderr=err)
    last = out.getvalue().rstrip("\n").split("\n")[-1]
    assert last.startswith("clt_") and " " not in last
    token = ApiToken.objects.get()
    assert token.digest == hashlib.sha256(last.encode()).hexdigest()
    assert timedelta(days=6, hours=23) < token.expires_at - timezone.now() <= timedelta(days=7)
    assert "shown once" in err.getvalue()
    response = _get(client, last)
    assert response.status_code == 200
    assert response.json() == [{"slug": "team", "name": "Team", "description": "", "role": "reviewer", "runs": 0,
                                "questions": 0}]


@pytest.mark.parametrize(("argv", "flag"), [
    (["--reviewer", "nobody"], "--reviewer"),
    (["--reviewer", "rob", "--expires-days", "0"], "--expires-days"),
    (["--reviewer", "rob", "--expires-days", "3651"], "--expires-days"),
    (["--reviewer", "rob", "--role", "lead"], "--role"),
    (["--reviewer", "stranger"], "--reviewer"),
])
def test_create_token_refuses_bad_input_naming_the_flag(team, argv, flag):
    ReviewerFactory(username="stranger")  # exists, member of no project
    with pytest.raises(CommandError, match=flag):
        call_command("create_token", "--project", "team", *argv, stdout=io.StringIO(), stderr=io.StringIO())
    assert ApiToken.objects.count() == 0


def test_token_role_is_capped_by_the_members_role_now(team, client):
    """A lead's token acts as a lead until the member is demoted: then as a viewer; removed: 401."""
    project, people = team
    secret = token_create(project=project, reviewer=people["lea"], created_by=None).secret
    assert _get(client, secret).json()[0]["role"] == "lead"
    Membership.objects.filter(reviewer=people["lea"]).update(role=Role.VIEWER)
    assert _get(client, secret).json()[0]["role"] == "viewer"
    Membership.objects.filter(reviewer=people["lea"]).delete()
    response = _get(client, secret)
    assert response.status_code == 401
    assert "no longer a member of project team" in response.json()["detail"]
    assert response["WWW-Authenticate"] == 'Bearer realm="citelab"'


def test_expired_revoked_and_unknown_tokens_answer_401_saying_why(team, client):
    project, people = team
    expired = token_create(project=project, reviewer=people["rob"], created_by=None, name="old")
    ApiToken.objects.filter(pk=expired.token.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    revoked = token_create(project=project, reviewer=people["rob"], created_by=None, name="gone")
    token_revoke(token=revoked.token, by=people["lea"])
    answers = {name: _get(client, secret) for name, secret in (
        ("expired", expired.secret), ("revoked", revoked.secret), ("unknown", "clt_" + "x" * 43),
        ("not ours", "ghp_abc"))}
    assert {name: r.status_code for name, r in answers.items()} == dict.fromkeys(answers, 401)
    assert "expired" in answers["expired"].json()["detail"]
    assert "revoked" in answers["revoked"].json()["detail"]
    assert answers["unknown"].json()["detail"] == "Unknown token."
    assert client.get("/api/v1/projects").json() == {"detail": "Unauthorized"}


def test_a_session_login_is_not_an_api_token(team, client):
    client.force_login(team[1]["lea"])
    assert client.get("/api/v1/projects").status_code == 401


def test_last_use_is_recorded_at_most_once_a_minute(team, client, django_assert_num_queries):
    project, people = team
    secret = token_create(project=project, reviewer=people["rob"], created_by=None).secret
    assert ApiToken.objects.get().last_used_at is None
    _get(client, secret)
    first = ApiToken.objects.get().last_used_at
    assert first is not None
    # Within the minute: token lookup (1) and the two counts of the project (2), no UPDATE.
    with django_assert_num_queries(3):
        _get(client, secret)
    assert ApiToken.objects.get().last_used_at == first
    ApiToken.objects.update(last_used_at=first - timedelta(minutes=2))
    _get(client, secret)
    assert ApiToken.objects.get().last_used_at > first


def test_rate_limit_counts_per_token_per_minute(team, client, settings, monkeypatch):
    """Limit 3 a minute: the 4th request of a token is 429 with Retry-After (seconds to the
    next minute: 60 − 20.5 = 39.5, rounded up to 40); another token keeps its own count; the next minute resets."""
    project, people = team
    cache.clear()
    settings.CITELAB_API_RATE_PER_MINUTE = 3
    clock = [1_000_040.5]  # minute 16,667 began at 1,000,020: 20.5 s into it
    monkeypatch.setattr(main, "clock", lambda: clock[0])
    first = token_create(project=project, reviewer=people["rob"], created_by=None, name="a").secret
    second = token_create(project=project, reviewer=people["vic"], created_by=None, name="b").secret
    assert [_get(client, first).status_code for _ in range(3)] == [200, 200, 200]
    refused = _get(client, first)
    assert refused.status_code == 429
    assert refused["Retry-After"] == "40"
    assert refused.json() == {"detail": "Too many requests."}
    assert _get(client, second).status_code == 200
    clock[0] += 40
    assert _get(client, first).status_code == 200


def test_tokens_page_shows_a_new_token_once_and_lists_it_with_its_last_use(team, client):
    project, people = team
    client.force_login(people["lea"])
    response = client.post("/p/team/tokens/", {"reviewer": "rob", "name": "nightly", "days": "30"})
    assert response.status_code == 200
    token = ApiToken.objects.get()
    secret = response.context["issued"].secret
    assert secret.encode() in response.content
    assert (token.name, token.reviewer, token.role, token.created_by) == ("nightly", people["rob"], "reviewer",
                                                                          people["lea"])
    page = client.get("/p/team/tokens/")
    assert secret.encode() not in page.content
    assert token.prefix.encode() in page.content
    assert b"never" in page.content
    _get(client, secret)
    assert b"never" not in client.get("/p/team/tokens/").content


def test_tokens_page_makes_a_bot_account_that_cannot_log_in(team, client):
    client.force_login(team[1]["lea"])
    response = client.post("/p/team/tokens/", {"bot": "ci-bot", "role": "reviewer", "name": "ci"})
    assert response.status_code == 200 and response.context["error"] == ""
    bot = ApiToken.objects.get().reviewer
    assert (bot.username, bot.kind, bot.has_usable_password()) == ("ci-bot", ReviewerKind.HUMAN, False)
    assert Membership.objects.get(reviewer=bot).role == Role.REVIEWER


def test_tokens_page_refuses_a_role_above_the_members(team, client):
    client.force_login(team[1]["lea"])
    response = client.post("/p/team/tokens/", {"reviewer": "vic", "role": "lead"})
    assert response.status_code == 200
    assert "vic is a viewer of project team: their token cannot be a lead's" in response.context["error"]
    assert ApiToken.objects.count() == 0


def test_revoking_on_the_page_ends_the_token(team, client):
    project, people = team
    issued = token_create(project=project, reviewer=people["rob"], created_by=None, name="ci")
    assert _get(client, issued.secret).status_code == 200
    client.force_login(people["lea"])
    response = client.post(f"/p/team/tokens/{issued.token.pk}/revoke/")
    assert response.status_code == 302
    token = ApiToken.objects.get()
    assert token.revoked_by == people["lea"] and token.revoked_at is not None
    assert _get(client, issued.secret).status_code == 401
    # The name is free again for a new token.
    token_create(project=project, reviewer=people["rob"], created_by=None, name="ci")
    assert ApiToken.objects.filter(name="ci").count() == 2


def test_only_a_lead_makes_tokens(team):
    project, people = team
    with pytest.raises(Exception, match="Only a lead"):
        token_create(project=project, reviewer=people["rob"], created_by=people["rob"])
    with pytest.raises(TokenRefused):
        token_authenticate("clt_nothing")


@pytest.mark.parametrize("rows", [5, 500])
def test_tokens_page_query_budget(team, client, django_assert_max_num_queries, rows):
    """Session + user (2), the project with the lead's role (1), the tokens with their
    reviewer, maker and revoker (1), the members (1): 5, whatever the number of tokens."""
    project, people = team
    now = timezone.now()
    ApiToken.objects.bulk_create([
        ApiToken(project=project, reviewer=people["rob"], name=f"t{i}", role="reviewer", prefix=f"clt_{i}",
                 digest=f"{i:064x}", created_by=people["lea"], expires_at=now + timedelta(days=1))
        for i in range(rows)])
    client.force_login(people["lea"])
    with django_assert_max_num_queries(5):
        response = client.get("/p/team/tokens/")
    assert response.content.count(b'class="token-active"') == rows


@pytest.mark.django_db
def test_token_reads_query_counts(django_assert_num_queries):
    project = ProjectFactory(slug="tokens")
    rob, root = ReviewerFactory(username="rob"), ReviewerFactory(username="root", is_superuser=True)
    Membership.objects.create(project=project, reviewer=rob, role=Role.REVIEWER)
    with django_assert_num_queries(1):
        assert member_role(project_id=project.pk, reviewer=rob) == Role.REVIEWER
    with django_assert_num_queries(0):
        assert member_role(project_id=project.pk, reviewer=root) == Role.LEAD
    secret = token_create(project=project, reviewer=rob, created_by=root).secret
    # The token with its reviewer, project and role; its first use is recorded (an UPDATE).
    with django_assert_num_queries(2):
        token_authenticate(secret)
    with django_assert_num_queries(1):
        assert token_authenticate(secret).role == Role.REVIEWER
    with django_assert_num_queries(1):
        assert [token.reviewer.username for token in project_tokens(project=project)] == ["rob"]
