"""Middleware of Citelab."""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.db import OperationalError
from django.http import HttpRequest, HttpResponse

logger = logging.getLogger(__name__)

# What SQLite says when its busy timeout (settings: 20 s) ran out before another writer finished.
_BUSY = ("database is locked", "database table is locked")
RETRY_AFTER_SECONDS = 2


class DatabaseBusyMiddleware:
    """Turn SQLite's "database is locked" into 503 Service Unavailable with
    ``Retry-After`` and a plain message ("busy, retry"), never a 500: the
    embedded database takes one writer at a time, and a request that waited
    its whole busy timeout wrote nothing (its transaction rolled back)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not isinstance(exception, OperationalError) or not any(text in str(exception) for text in _BUSY):
            return None
        logger.warning("database busy on %s %s: answered 503", request.method, request.path)
        response = HttpResponse(
            "The database is busy with other saves: nothing was saved. Retry in a few seconds.",
            status=503, content_type="text/plain; charset=utf-8")
        response["Retry-After"] = str(RETRY_AFTER_SECONDS)
        return response
