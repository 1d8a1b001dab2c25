"""Login throttling glue for django-axes (SPEC §7): which name a failed
login counts against, and the page a paused login gets.

django-axes counts failed logins per (username, client address) and, after
``AXES_FAILURE_LIMIT`` failures within ``AXES_COOLOFF_TIME``, answers every
further attempt of that pair with HTTP 429 until the cool-off has passed
(settings: ``CITELAB_LOGIN_FAILURES``, ``CITELAB_LOGIN_PAUSE_MINUTES``).
"""

from __future__ import annotations

from axes.backends import AxesStandaloneBackend
from django.conf import settings
from django.contrib.auth import views as auth_views
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from labeling.models import Reviewer


class LoginThrottleBackend(AxesStandaloneBackend):
    """django-axes' check for logins over HTTP; a check of a password in code
    (``authenticate(username=…, password=…)`` without a request: a script, a
    test) has no client address to count against and is not throttled."""

    def authenticate(self, request: HttpRequest | None, username: str | None = None, password: str | None = None,
                     **kwargs) -> None:
        if request is None:
            return None
        return super().authenticate(request, username=username, password=password, **kwargs)


def login_username(request: HttpRequest, credentials: dict | None) -> str:
    """The name a login attempt is counted against, in the project's normal form
    (``labeling.names``): ``ｒｅｖ０１`` and ``rev01`` are one account, so they
    share one failure count."""
    raw = (credentials or {}).get("username")
    if raw is None:
        raw = request.POST.get("username", "")
    return Reviewer.normalize_username(raw) if isinstance(raw, str) else ""


def lockout_response(request: HttpRequest, original_response: HttpResponse | None = None,
                     credentials: dict | None = None) -> HttpResponse:
    """HTTP 429 with ``registration/locked_out.html``: how many failures paused
    the login and for how many minutes."""
    minutes = int(settings.AXES_COOLOFF_TIME.total_seconds() // 60)
    return render(request, "registration/locked_out.html", {
        "failure_limit": settings.AXES_FAILURE_LIMIT, "username": login_username(request, credentials),
        "minutes": minutes,
    }, status=429)


class LoginView(auth_views.LoginView):
    """Django's login page, with the single sign-on button when it is configured (``labeling.integrations.sso``)."""

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        context["sso_label"] = settings.CITELAB_OIDC_LOGIN_LABEL if settings.CITELAB_OIDC_ENABLED else ""
        return context
