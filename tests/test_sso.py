"""Single sign-on (SPEC §6) against a fake OpenID Connect provider on
127.0.0.1 that this test starts: its token endpoint signs ID tokens (RS256)
with a key it publishes at its JWKS endpoint, and its userinfo endpoint
answers for the access token it gave. The browser's trip to the provider's
authorization page is played by the test: it reads the state and nonce from
the redirect, then comes back to the callback with a code."""

from __future__ import annotations

import base64
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

from labeling.integrations.sso import role_map
from labeling.models import Membership, Reviewer, Role
from tests.factories import ProjectFactory, ReviewerFactory

CLIENT_ID, CLIENT_SECRET = "citelab", "s3cret-of-the-client"


class Provider:
    """The fake provider: ``grant(code, claims, nonce)`` says what a code logs in as."""

    def __init__(self):
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.grants: dict[str, tuple[dict, str]] = {}
        self.token_requests: list[dict] = []
        provider = self

        class Handler(BaseHTTPRequestHandler):
            def _json(self, status: int, body: dict) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                form = parse_qs(self.rfile.read(int(self.headers["Content-Length"])).decode())
                # The client's credentials: HTTP Basic, or client_id and client_secret in the form.
                header = self.headers.get("Authorization", "")
                basic = base64.b64decode(header.split()[1]).decode() if header.startswith("Basic ") else (
                    f"{form.get('client_id', [''])[0]}:{form.get('client_secret', [''])[0]}")
                provider.token_requests.append({"form": form, "basic": basic})
                code = form.get("code", [""])[0]
                if basic != f"{CLIENT_ID}:{CLIENT_SECRET}" or code not in provider.grants:
                    return self._json(400, {"error": "invalid_grant"})
                claims, nonce = provider.grants[code]
                now = int(time.time())
                id_token = jwt.encode({"iss": provider.url, "sub": claims["sub"], "aud": CLIENT_ID, "iat": now,
                                       "exp": now + 300, "nonce": nonce}, provider.key, algorithm="RS256",
                                      headers={"kid": "k1"})
                self._json(200, {"access_token": f"at-{code}", "token_type": "Bearer", "id_token": id_token})

            def do_GET(self) -> None:  # noqa: N802
                if self.path == "/jwks":
                    key = json.loads(RSAAlgorithm.to_jwk(provider.key.public_key())) | {"kid": "k1", "use": "sig",
                                                                                       "alg": "RS256"}
                    return self._json(200, {"keys": [key]})
                token = self.headers.get("Authorization", "").removeprefix("Bearer at-")
                if self.path == "/userinfo" and token in provider.grants:
                    return self._json(200, provider.grants[token][0])
                self._json(401, {"error": "invalid_token"})

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def grant(self, code: str, claims: dict, nonce: str) -> None:
        self.grants[code] = (claims, nonce)

    def __enter__(self) -> Provider:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def provider(settings, monkeypatch):
    """The provider, and Citelab configured for it (as CITELAB_OIDC_* would), mapping the
    ``groups`` claim value ``team-reviewers`` to reviewer of project ``team``."""
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    with Provider() as running:
        settings.CITELAB_OIDC_ENABLED = True
        settings.CITELAB_OIDC_ISSUER = running.url
        settings.CITELAB_OIDC_ROLE_MAP = "team-reviewers=team:reviewer, team-leads=team:lead"
        settings.OIDC_RP_CLIENT_ID, settings.OIDC_RP_CLIENT_SECRET = CLIENT_ID, CLIENT_SECRET
        settings.OIDC_OP_AUTHORIZATION_ENDPOINT = running.url + "/authorize"
        settings.OIDC_OP_TOKEN_ENDPOINT = running.url + "/token"
        settings.OIDC_OP_USER_ENDPOINT = running.url + "/userinfo"
        settings.OIDC_OP_JWKS_ENDPOINT = running.url + "/jwks"
        settings.OIDC_RP_SIGN_ALGO = "RS256"
        settings.OIDC_RP_SCOPES = "openid email profile"
        settings.AUTHENTICATION_BACKENDS = [
            *settings.AUTHENTICATION_BACKENDS, "labeling.integrations.sso.CitelabOIDCBackend"]
        yield running


def _log_in(client, provider: Provider, code: str, claims: dict, *, next_url: str = "/"):
    """The whole trip: Citelab → the provider (state, nonce) → back with ``code``."""
    response = client.get("/sso/login/", {"next": next_url})
    assert response.status_code == 302
    target = urlsplit(response["Location"])
    query = {key: values[0] for key, values in parse_qs(target.query).items()}
    assert f"{target.scheme}://{target.netloc}{target.path}" == provider.url + "/authorize"
    assert (query["client_id"], query["response_type"], query["redirect_uri"]) == (
        CLIENT_ID, "code", "http://testserver/sso/callback/")
    provider.grant(code, claims, query["nonce"])
    return client.get("/sso/callback/", {"code": code, "state": query["state"]})


@pytest.fixture
def team(db):
    return ProjectFactory(slug="team", name="Team")


def test_first_login_creates_a_reviewer_with_no_membership(provider, client, team):
    response = _log_in(client, provider, "c1", {"sub": "u-1", "preferred_username": "dana",
                                                 "email": "dana@example.org"}, next_url="/p/team/")
    assert response.status_code == 302 and response["Location"] == "/p/team/"
    dana = Reviewer.objects.get(username="dana")
    assert (dana.sso_identity.subject, dana.email, dana.kind, dana.has_usable_password()) == (
        f"{provider.url}|u-1", "dana@example.org", "human", False)
    assert not Membership.objects.filter(reviewer=dana).exists()
    # Logged in, and a member of nothing: the project is not hers to open.
    assert client.get("/").status_code == 200 and client.get("/p/team/").status_code == 404
    # The code was exchanged with the client's credentials.
    assert provider.token_requests[-1]["basic"] == f"{CLIENT_ID}:{CLIENT_SECRET}"


def test_the_role_claim_maps_to_a_membership_at_first_login_only(provider, client, team):
    claims = {"sub": "u-2", "preferred_username": "eve", "groups": ["team-reviewers", "other"]}
    assert _log_in(client, provider, "c2", claims).status_code == 302
    eve = Reviewer.objects.get(username="eve")
    assert list(Membership.objects.filter(reviewer=eve).values_list("project__slug", "role")) == [
        ("team", Role.REVIEWER)]
    assert client.get("/p/team/").status_code == 200
    # A lead makes her a viewer; her next login (now in team-leads too) leaves that alone.
    Membership.objects.filter(reviewer=eve).update(role=Role.VIEWER)
    client.logout()
    assert _log_in(client, provider, "c3", claims | {"groups": ["team-leads"]}).status_code == 302
    assert Membership.objects.get(reviewer=eve).role == Role.VIEWER
    assert Reviewer.objects.filter(sso_identity__subject=f"{provider.url}|u-2").count() == 1


def test_a_provider_name_that_a_local_account_holds_is_another_reviewer(provider, client, team):
    """The provider's "lea" is not the local lead lea: she is lea@sso, found by her sub afterwards."""
    lea = ReviewerFactory(username="lea")
    Membership.objects.create(project=team, reviewer=lea, role=Role.LEAD)
    assert _log_in(client, provider, "c4", {"sub": "u-3", "preferred_username": "lea"}).status_code == 302
    other = Reviewer.objects.get(sso_identity__subject=f"{provider.url}|u-3")
    assert other.username == "lea@sso" and other != lea
    assert client.get("/p/team/").status_code == 404
    client.logout()
    # The same subject under a new name is the same reviewer.
    assert _log_in(client, provider, "c5", {"sub": "u-3", "preferred_username": "lea2"}).status_code == 302
    assert Reviewer.objects.filter(username__startswith="lea").count() == 2


def test_a_forged_state_or_a_wrong_nonce_logs_nobody_in(provider, client, team):
    response = client.get("/sso/login/")
    query = {key: values[0] for key, values in parse_qs(urlsplit(response["Location"]).query).items()}
    provider.grant("c6", {"sub": "u-4", "preferred_username": "mallory"}, "not-the-nonce")
    # mozilla-django-oidc refuses both as suspicious (400), before anyone is looked up.
    assert client.get("/sso/callback/", {"code": "c6", "state": query["state"]}).status_code == 400
    assert client.get("/sso/callback/", {"code": "c6", "state": "forged"}).status_code == 400
    # The provider says the login failed: back to the login page, which says so.
    failed = client.get("/sso/callback/", {"error": "access_denied", "state": query["state"]})
    assert failed["Location"] == "/login/?sso=failed"
    assert b"Single sign-on did not log you in" in client.get(failed["Location"]).content
    assert not Reviewer.objects.filter(username="mallory").exists()
    assert "_auth_user_id" not in client.session


def test_the_login_page_offers_sso_only_when_configured(provider, client, settings, db):
    assert b"Log in with single sign-on" in client.get("/login/").content
    settings.CITELAB_OIDC_ENABLED = False
    assert b"single sign-on" not in client.get("/login/").content
    assert client.get("/sso/login/").status_code == 404
    assert client.get("/sso/callback/").status_code == 404


def test_the_role_map_setting_is_read_strictly():
    assert role_map("a=team:lead, b=team:viewer,a=rag:reviewer") == {
        "a": [("team", "lead"), ("rag", "reviewer")], "b": [("team", "viewer")]}
    for bad in ("a=team", "a=team:boss", "=team:lead"):
        with pytest.raises(Exception, match="CITELAB_OIDC_ROLE_MAP"):
            role_map(bad)
