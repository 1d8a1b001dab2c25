"""Login (SPEC §7): failed-login throttling by django-axes, Django's password
validators, and sessions that expire.

Throttling counts failures per (reviewer name in normal form, client address):
the 5th wrong password within 15 minutes pauses that pair; every attempt after
it, even with the right password, answers 429 until 15 minutes after the last
failure. Another address, or the time passing, lets the reviewer in again.
"""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import timedelta

import pytest
from axes.models import AccessAttempt
from django.contrib.auth import SESSION_KEY
from django.contrib.sessions.models import Session
from django.core.management import CommandError, call_command
from django.urls import reverse
from django.utils import timezone

from tests.conftest import REPO_ROOT
from tests.factories import ReviewerFactory

pytestmark = pytest.mark.django_db

PASSWORD = "pw-for-tests-1"  # tests/factories.py


def _login(client, username: str, password: str, address: str = "10.0.0.1", url: str = "login"):
    return client.post(reverse(url), {"username": username, "password": password}, REMOTE_ADDR=address)


def test_the_fifth_failure_pauses_the_login_for_15_minutes(client):
    """Failures 1–4: the form again (200). The 5th: 429. The right password from the
    same address: still 429. From another address: logged in (302)."""
    ReviewerFactory(username="rev01")

    statuses = [_login(client, "rev01", f"wrong-{n}").status_code for n in range(5)]
    paused = _login(client, "rev01", PASSWORD)
    elsewhere = _login(client, "rev01", PASSWORD, address="10.0.0.2")

    assert statuses == [200, 200, 200, 200, 429]
    assert paused.status_code == 429
    page = paused.content.decode()
    assert "Too many failed logins" in page
    assert "5 wrong passwords in a row for <strong>rev01</strong>" in page
    assert "paused for 15 minutes" in page
    assert elsewhere.status_code == 302 and elsewhere["Location"] == reverse("project_list")


def test_the_pause_ends_15_minutes_after_the_last_failure(client):
    ReviewerFactory(username="rev01")
    for n in range(5):
        _login(client, "rev01", f"wrong-{n}")
    attempt = AccessAttempt.objects.get(username="rev01", ip_address="10.0.0.1")
    assert attempt.failures_since_start == 5

    AccessAttempt.objects.filter(pk=attempt.pk).update(attempt_time=timezone.now() - timedelta(minutes=14))
    still = _login(client, "rev01", PASSWORD)
    AccessAttempt.objects.filter(pk=attempt.pk).update(attempt_time=timezone.now() - timedelta(minutes=16))
    after = _login(client, "rev01", PASSWORD)

    assert still.status_code == 429
    assert after.status_code == 302


def test_a_success_before_the_limit_resets_the_count(client):
    """4 failures, a success, 4 failures: never paused (the count restarts at a success)."""
    ReviewerFactory(username="rev01")
    first = [_login(client, "rev01", f"wrong-{n}").status_code for n in range(4)]
    ok = _login(client, "rev01", PASSWORD)
    client.logout()
    second = [_login(client, "rev01", f"wrong-{n}").status_code for n in range(4)]

    assert first == second == [200, 200, 200, 200]
    assert ok.status_code == 302


def test_spellings_of_one_name_share_its_count(client):
    """``ｒｅｖ０１`` (fullwidth) is ``rev01`` (labeling.names): 3 + 2 failures pause it."""
    ReviewerFactory(username="rev01")
    for n in range(3):
        _login(client, "ｒｅｖ０１", f"wrong-{n}")
    for n in range(2):
        _login(client, "rev01", f"wrong-{n}")

    assert _login(client, "rev01", PASSWORD).status_code == 429


def test_the_admin_login_is_throttled_too(client):
    ReviewerFactory(username="boss", is_staff=True, is_superuser=True)
    statuses = [_login(client, "boss", f"wrong-{n}", url="admin:login").status_code for n in range(5)]

    assert statuses == [200, 200, 200, 200, 429]
    assert _login(client, "boss", PASSWORD, url="admin:login").status_code == 429


def test_failures_for_unknown_names_are_paused_the_same(client):
    """Guessing names gains nothing: an unknown name is paused like a real one."""
    statuses = [_login(client, "nobody", f"wrong-{n}").status_code for n in range(6)]

    assert statuses == [200, 200, 200, 200, 429, 429]


# -- password validators ----------------------------------------------------------------------------

@pytest.mark.parametrize(("password", "reason"), [
    ("short-1", "This password is too short. It must contain at least 10 characters."),
    ("password123", "This password is too common."),
    ("20261201123", "This password is entirely numeric."),
    ("carol.smith-x", "The password is too similar to the username."),
])
def test_add_reviewer_refuses_weak_passwords(password, reason):
    with pytest.raises(CommandError, match=reason.replace(".", r"\.")):
        call_command("add_reviewer", "carol.smith", "--password", password)


def test_add_reviewer_accepts_a_strong_password():
    call_command("add_reviewer", "carol", "--password", "correct horse battery")


# -- sessions ----------------------------------------------------------------------------------------

def test_a_session_lasts_its_configured_age_then_ends(client, settings):
    """SESSION_COOKIE_AGE (CITELAB_SESSION_HOURS, default 12 h = 43,200 s): the cookie
    says so, and a session past its expiry date logs nobody in."""
    ReviewerFactory(username="rev01")
    response = _login(client, "rev01", PASSWORD)
    cookie = response.cookies[settings.SESSION_COOKIE_NAME]
    assert settings.SESSION_COOKIE_AGE == 12 * 3600
    assert int(cookie["max-age"]) == 43_200
    assert client.get(reverse("project_list")).status_code == 200

    session = Session.objects.get(session_key=cookie.value)
    assert session.get_decoded()[SESSION_KEY]
    Session.objects.filter(pk=session.pk).update(expire_date=timezone.now() - timedelta(seconds=1))
    expired = client.get(reverse("project_list"))

    assert expired.status_code == 302
    assert expired["Location"].startswith(reverse("login"))


def _settings_value(env: dict[str, str], expression: str) -> str:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("CITELAB_")}
    code = f"import django; django.setup(); from django.conf import settings; print({expression})"
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True,
                            env={**clean, "DJANGO_SETTINGS_MODULE": "labeling.settings", "DEBUG": "1", **env})
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_session_age_and_throttle_come_from_the_environment():
    value = _settings_value({"CITELAB_SESSION_HOURS": "2", "CITELAB_LOGIN_FAILURES": "3",
                             "CITELAB_LOGIN_PAUSE_MINUTES": "60"},
                            "settings.SESSION_COOKIE_AGE, settings.AXES_FAILURE_LIMIT, settings.AXES_COOLOFF_TIME")
    assert value == "7200 3 1:00:00"
