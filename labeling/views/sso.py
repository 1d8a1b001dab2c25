"""The single sign-on login and callback (``labeling.integrations.sso``): mozilla-django-oidc's views,
404 while SSO is off. Its modules load on the first SSO request, not with every page."""

from __future__ import annotations

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse


def _enabled() -> None:
    if not settings.CITELAB_OIDC_ENABLED:
        raise Http404("Single sign-on is not configured (CITELAB_OIDC_CLIENT_ID).")


def sso_login(request: HttpRequest) -> HttpResponse:
    """Redirect to the provider (state and nonce kept in the session); 404 when SSO is off."""
    _enabled()
    from mozilla_django_oidc.views import OIDCAuthenticationRequestView

    return OIDCAuthenticationRequestView.as_view()(request)


def sso_callback(request: HttpRequest) -> HttpResponse:
    """The provider's redirect back: log the reviewer in, or back to the login page; 404 when SSO is off."""
    _enabled()
    from mozilla_django_oidc.views import OIDCAuthenticationCallbackView

    return OIDCAuthenticationCallbackView.as_view()(request)
