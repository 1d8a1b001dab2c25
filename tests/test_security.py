"""HTTP security settings and untrusted text (SPEC §7).

- Every response carries a Content-Security-Policy that lets a browser run
  only the app's own scripts and styles, and forbids framing.
- ``DEBUG`` is off unless turned on; with it off, HTTPS is enforced (redirect,
  HSTS, secure cookies) unless a loopback setup switches it off, and
  ``manage.py check --deploy`` finds nothing to warn about.
- Templates hold no inline script, event handler or style attribute (the
  policy would block them; the browser tests also fail on any violation).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from django.urls import reverse

from tests.conftest import REPO_ROOT

# A production-like environment: DEBUG off, a long random-looking key, a real host name.
PRODUCTION = {"DEBUG": "0", "SECRET_KEY": "k7#Qz!r2V9m$Lp4wXe8Tn1Bc6Hy3Ud5Fj0Ga+Ks7Io2Pq9Rw4Sv8Yt1Zx6Ab3Cd",
              "ALLOWED_HOSTS": "citelab.example.org"}
_DROPPED = ("DATABASE_URL", "DEBUG", "SECRET_KEY", "ALLOWED_HOSTS", "CITELAB_SSL_REDIRECT", "CITELAB_SECURE_COOKIES",
            "CITELAB_HSTS_SECONDS", "CITELAB_PROXY_SSL_HEADER", "DJANGO_ALLOW_ASYNC_UNSAFE")


def _run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if k not in _DROPPED}
    return subprocess.run(args, cwd=REPO_ROOT, capture_output=True, text=True, timeout=300,
                          env={**clean, "DJANGO_SETTINGS_MODULE": "labeling.settings", **env})


def _settings(env: dict[str, str], *names: str) -> list[str]:
    code = ("import django; django.setup(); from django.conf import settings; "
            f"print(*[getattr(settings, n) for n in {list(names)!r}], sep='|')")
    result = _run([sys.executable, "-c", code], env)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip().split("|")


def test_debug_is_off_by_default_and_https_is_then_enforced():
    values = _settings({"SECRET_KEY": PRODUCTION["SECRET_KEY"]}, "DEBUG", "SECURE_SSL_REDIRECT",
                       "SECURE_HSTS_SECONDS", "SESSION_COOKIE_SECURE", "CSRF_COOKIE_SECURE", "X_FRAME_OPTIONS")
    assert values == ["False", "True", str(365 * 24 * 3600), "True", "True", "DENY"]


def test_plain_http_loopback_switches_and_debug_on():
    loopback = _settings({**PRODUCTION, "CITELAB_SSL_REDIRECT": "0", "CITELAB_SECURE_COOKIES": "0"},
                         "DEBUG", "SECURE_SSL_REDIRECT", "SECURE_HSTS_SECONDS", "SESSION_COOKIE_SECURE")
    debug = _settings({"DEBUG": "1"}, "DEBUG", "SECURE_SSL_REDIRECT", "SESSION_COOKIE_SECURE")
    assert loopback == ["False", "False", "0", "False"]
    assert debug == ["True", "False", "False"]


def test_check_deploy_is_clean_with_production_settings():
    """``manage.py check --deploy`` with DEBUG off and a real key: no warning at all
    (``--fail-level WARNING`` makes any warning an exit status 1)."""
    result = _run([sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"], PRODUCTION)

    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip() == "System check identified no issues (0 silenced)."


def test_check_deploy_names_what_a_plain_http_setup_gives_up():
    """The loopback switches are visible: check --deploy lists exactly their warnings."""
    result = _run([sys.executable, "manage.py", "check", "--deploy"],
                  {**PRODUCTION, "CITELAB_SSL_REDIRECT": "0", "CITELAB_SECURE_COOKIES": "0"})

    assert result.returncode == 0, result.stderr
    assert sorted(re.findall(r"\(security\.(W\d+)\)", result.stdout + result.stderr)) == [
        "W004", "W008", "W012", "W016"]


_HEADERS = """
from django.test import Client
client = Client()
plain = client.get("/login/", HTTP_HOST="citelab.example.org")
secure = client.get("/login/", HTTP_HOST="citelab.example.org", secure=True)
print(plain.status_code, plain["Location"])
print(secure.status_code)
for name in ("Strict-Transport-Security", "Content-Security-Policy", "X-Frame-Options", "X-Content-Type-Options"):
    print(name, "=", secure.get(name))
print("cookie secure:", bool(secure.cookies["csrftoken"]["secure"]))
"""


def test_production_redirects_to_https_and_sends_the_security_headers():
    result = _run([sys.executable, "-c", "import django; django.setup()\n" + _HEADERS], PRODUCTION)

    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    assert lines[0] == "301 https://citelab.example.org/login/"
    assert lines[1] == "200"
    headers = dict(line.split(" = ", 1) for line in lines[2:6])
    assert headers["Strict-Transport-Security"] == "max-age=31536000; includeSubDomains; preload"
    assert headers["X-Frame-Options"] == "DENY"
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert "script-src 'self'" in headers["Content-Security-Policy"]
    assert lines[6] == "cookie secure: True"


def test_every_page_has_a_policy_allowing_only_the_apps_own_scripts_and_styles(client):
    response = client.get(reverse("login"))

    policy = dict(part.strip().split(" ", 1) for part in response["Content-Security-Policy"].split(";"))
    assert policy["default-src"] == "'self'"
    assert policy["script-src"] == "'self'"
    assert policy["style-src"] == "'self'"
    assert policy["frame-ancestors"] == "'none'"
    assert policy["object-src"] == "'none'"
    assert "unsafe" not in response["Content-Security-Policy"]
    assert response["X-Frame-Options"] == "DENY"


_INLINE = [
    (re.compile(r"<script(?![^>]*\bsrc=)[^>]*>", re.I), "inline <script>"),
    (re.compile(r"\son[a-z]+\s*=", re.I), "event handler attribute"),
    (re.compile(r"\sstyle\s*=", re.I), "style attribute"),
    (re.compile(r"<style", re.I), "<style> element"),
    (re.compile(r"javascript:", re.I), "javascript: URL"),
    (re.compile(r"\shx-on", re.I), "hx-on handler (evaluated code)"),
]


def test_templates_hold_no_inline_script_or_style():
    """What the policy would block, found in the source: JS belongs in static/js/, CSS in static/css/."""
    found = []
    for path in sorted((REPO_ROOT / "templates").rglob("*.html")):
        text = path.read_text(encoding="utf-8")
        for pattern, what in _INLINE:
            for match in pattern.finditer(text):
                line = text.count("\n", 0, match.start()) + 1
                found.append(f"{path.relative_to(REPO_ROOT)}:{line}: {what}")
    assert found == []


@pytest.mark.django_db
def test_the_demo_runs_with_the_readmes_command_without_any_setting(tmp_path):
    """``manage.py demo`` turns DEBUG on itself: no SECRET_KEY needed, as the README promises."""
    result = _run([sys.executable, "manage.py", "demo", "--no-serve"],
                  {"DATABASE_URL": f"sqlite:///{tmp_path / 'demo.sqlite3'}", "CITELAB_MEDIA_ROOT": str(tmp_path)})

    assert result.returncode == 0, result.stderr
    assert "Log in as reviewer 'demo' with password 'citelab-demo'" in result.stdout
