"""The API object: auth by project token, a rate limit per token, one JSON
shape for every error, and every operation's audit events naming its token.

Errors are ``{"detail": "…"}``; those about the request's content add
``"errors": [{"field": …, "reason": …}]`` (an import's add ``"line"``):
- 400 the body is not JSON; 401 no, unknown, revoked or expired token;
  403 the token's role may not do this; 404 not found (or not this token's
  project); 405 wrong method; 409 a conflict (a label changed since it was
  read, a gate that failed, an unchanged version); 413 a body over the
  limit; 422 a field is missing, of the wrong type, unknown or invalid
  (nothing written); 429 over the token's rate (``Retry-After``); 503 the
  database is busy (``Retry-After``, from ``labeling.middleware``).
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.core.exceptions import PermissionDenied, RequestDataTooBig
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError
from ninja.errors import ValidationError as NinjaValidationError
from ninja.openapi.docs import Swagger
from ninja.security import HttpBearer
from ninja.throttling import BaseThrottle

from labeling.api.access import FieldRefused
from labeling.audit import api_token_events
from labeling.importers.records import ImportFailed
from labeling.integrations.tokens import TokenAccess, TokenRefused, token_authenticate
from labeling.review.label_writes import LabelConflict

DESCRIPTION = """\
Claim-level citation review for RAG answers (see the README). Every route needs a project token:
`Authorization: Bearer clt_…`, made by a lead on the project's **API tokens** page or with
`manage.py create_token --reviewer NAME --project SLUG`. A token acts as its reviewer in its project,
with its role at most (viewer reads; reviewer also labels; lead also imports, saves versions, renames
and deletes runs and reads the audit log), and is rate limited. Lists are paginated with `limit` and
`offset` and return `{"items": [...], "count": N}`.
"""


class BearerToken(HttpBearer):
    """``Authorization: Bearer <token>`` (``labeling.integrations.tokens``): the request's
    ``auth`` becomes a :class:`TokenAccess`; 401 saying why otherwise."""

    def authenticate(self, request: HttpRequest, token: str) -> TokenAccess:
        try:
            return token_authenticate(token.strip())
        except TokenRefused as exc:
            raise AuthenticationError(message=str(exc)) from None


# Seconds since the epoch: the rate limit's clock (a test sets it).
clock = time.time


class TokenRateThrottle(BaseThrottle):
    """At most ``CITELAB_API_RATE_PER_MINUTE`` requests per token per clock
    minute, counted in Django's cache (``cache.incr`` is atomic there, so
    concurrent requests never both take the last slot). ninja's own
    throttles keep a list of every request's time per client in the cache,
    read and rewritten whole on each request: a fixed window is one counter.
    With the local-memory cache each server process counts its own requests;
    ``CITELAB_REDIS_URL`` makes the count shared."""

    def allow_request(self, request: HttpRequest) -> bool:
        access = getattr(request, "auth", None)
        if not isinstance(access, TokenAccess):
            return True
        limit = settings.CITELAB_API_RATE_PER_MINUTE
        now = clock()
        window = int(now // 60)
        key = f"citelab-api-rate:{access.token.digest[:32]}:{window}"
        cache.add(key, 0, timeout=120)
        try:
            count = cache.incr(key)
        except ValueError:  # expired between add and incr
            cache.add(key, 1, timeout=120)
            count = 1
        self._wait = (window + 1) * 60 - now
        return count <= limit

    def wait(self) -> float:
        return self._wait


class CitelabAPI(NinjaAPI):
    """Operation ids are the route functions' names (``run_score``), as are the URL names."""

    def get_openapi_operation_id(self, operation: Any) -> str:
        return operation.view_func.__name__


class AppSwagger(Swagger):
    """Swagger UI from ninja's own template and files, served by the app
    (settings.NINJA_DIR): ninja renders its CDN page unless it is an installed
    app, and Citelab keeps it out of ``INSTALLED_APPS`` for start-up time."""

    def render_page(self, request: HttpRequest, api: NinjaAPI, **kwargs: Any) -> HttpResponse:
        self.settings["url"] = self.get_openapi_url(api, kwargs)
        # add_csrf off: the API authenticates by bearer token, never by the session cookie.
        return render(request, self.template, {"swagger_settings": json.dumps(self.settings, indent=1), "api": api,
                                               "add_csrf": False})


api = CitelabAPI(
    title="Citelab API", version="1", description=DESCRIPTION, urls_namespace="api",
    auth=BearerToken(), throttle=[TokenRateThrottle()], docs=AppSwagger(), docs_url="/docs",
    openapi_url="/openapi.json",
    # The schema and its docs page are public and read-only.
    docs_decorator=require_GET,
)


def _with_token_events(operation: Callable[..., Any]) -> Callable[..., Any]:
    """Every operation runs inside ``api_token_events``: any audit event a
    service records meanwhile names the request's token (SPEC §6: every API
    write is audited with the token's name)."""

    @functools.wraps(operation)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
        access = getattr(request, "auth", None)
        if not isinstance(access, TokenAccess):
            return operation(request, *args, **kwargs)
        with api_token_events(access.token.name):
            return operation(request, *args, **kwargs)

    return wrapped


api.add_decorator(_with_token_events, mode="operation")


# -- errors ----------------------------------------------------------------------------------------

def field_name(loc: tuple | list) -> str:
    """A pydantic error location as the field a client wrote: ``("body", "body",
    "max_drop", "support")`` → ``max_drop.support``; list positions as ``[i]``;
    the whole body → ``body``."""
    parts = list(loc)
    source = parts.pop(0) if parts and parts[0] in ("body", "query", "path", "header", "cookie", "form") else ""
    if source == "body" and parts and parts[0] == "body":
        parts.pop(0)
    name = ""
    for part in parts:
        name += f"[{part}]" if isinstance(part, int) else (f".{part}" if name else str(part))
    return name or source or "body"


def error(request: HttpRequest, status: int, detail: str, **extra: Any) -> HttpResponse:
    """The API's JSON error response: ``{"detail": detail, **extra}``."""
    return api.create_response(request, {"detail": detail, **extra}, status=status)


@api.exception_handler(NinjaValidationError)
def _invalid(request: HttpRequest, exc: NinjaValidationError) -> HttpResponse:
    errors = []
    for item in exc.errors:
        reason = item.get("msg", "invalid")
        if item.get("type") == "extra_forbidden":
            reason = "unknown field"
        errors.append({"field": field_name(item.get("loc", ())), "reason": reason})
    names = ", ".join(dict.fromkeys(e["field"] for e in errors))
    return error(request, 422, f"Invalid request ({names}): nothing was changed.", errors=errors)


@api.exception_handler(HttpError)
def _http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
    cause = exc.__cause__
    if exc.status_code == 400 and isinstance(cause, json.JSONDecodeError | UnicodeDecodeError | ValueError):
        reason = f"not JSON: {cause}"
        return error(request, 400, f"The request body is {reason}: nothing was changed.",
                     errors=[{"field": "body", "reason": reason}])
    if isinstance(exc, FieldRefused):
        return error(request, exc.status_code, str(exc), errors=[{"field": exc.field, "reason": exc.reason}])
    response = error(request, exc.status_code, str(exc))
    if exc.status_code == 401:
        response["WWW-Authenticate"] = 'Bearer realm="citelab"'
    return response


@api.exception_handler(PermissionDenied)
def _forbidden(request: HttpRequest, exc: PermissionDenied) -> HttpResponse:
    return error(request, 403, str(exc) or "Your token's role may not do this.")


@api.exception_handler(LabelConflict)
def _conflict(request: HttpRequest, exc: LabelConflict) -> HttpResponse:
    from labeling.api.schemas import label_out

    newer = label_out(exc.newer) if exc.newer is not None else None
    return error(request, 409, exc.messages[0], code="conflict", newer=newer)


# The request field a service's refusal is about, by its ValidationError code.
_FIELD_OF_CODE = {
    "invalid_value": "value", "uncited_on_cited": "value", "judged_on_uncited": "value",
    "supported_on_fabricated": "value", "justification_required": "justification",
    "justification_too_long": "justification",
}


@api.exception_handler(DjangoValidationError)
def _refused(request: HttpRequest, exc: DjangoValidationError) -> HttpResponse:
    code = getattr(exc, "code", None) or "invalid"
    # Conflicts with the stored state (a claim changed or merged away meanwhile) are 409, as on the pages.
    if code == "conflict":
        return error(request, 409, " ".join(exc.messages), code=code)
    field = _FIELD_OF_CODE.get(code, "body")
    return error(request, 422, " ".join(exc.messages), code=code,
                 errors=[{"field": field, "reason": message} for message in exc.messages])


@api.exception_handler(ImportFailed)
def _import_failed(request: HttpRequest, exc: ImportFailed) -> HttpResponse:
    return error(request, 422, f"{len(exc.issues)} problem(s) in the file: nothing was imported.",
                 errors=[{"line": i.line, "field": i.field, "reason": i.reason} for i in exc.issues])


@api.exception_handler(RequestDataTooBig)
def _too_big(request: HttpRequest, exc: RequestDataTooBig) -> HttpResponse:
    return error(request, 413, f"The request body is larger than {settings.DATA_UPLOAD_MAX_MEMORY_SIZE:,} bytes: "
                               "nothing was changed.", errors=[{"field": "body", "reason": "too large"}])


@api.exception_handler(Exception)
def _unexpected(request: HttpRequest, exc: Exception) -> HttpResponse:
    # Django's handling, never a traceback in the body: a busy SQLite becomes the
    # middleware's 503 "busy, retry", anything else a logged 500.
    raise exc


from labeling.api import figures, judges, projects, reviews, versions  # noqa: E402  (routes register on `api`)

api.add_router("", projects.router)
api.add_router("", reviews.router)
api.add_router("", versions.router)
api.add_router("", figures.router)
api.add_router("", judges.router)
