"""Pagination of the API's lists: ``?limit=`` (1–500, default 100) and
``?offset=``; a page is ``{"items": [...], "count": N, "limit": …, "offset": …}``
with ``count`` the number of items over every page."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

from django.db.models import QuerySet
from ninja import Schema
from pydantic import Field, create_model

MAX_LIMIT = 500


class PageIn(Schema):
    limit: int = Field(100, ge=1, le=MAX_LIMIT, description=f"items per page (1–{MAX_LIMIT})")
    offset: int = Field(0, ge=0, description="items to skip")


@cache
def page_of(item: type[Schema]) -> type[Schema]:
    """The response schema of a page of ``item``s."""
    return create_model(f"{item.__name__}Page", __base__=Schema, items=(list[item], ...), count=(int, ...),
                        limit=(int, ...), offset=(int, ...))


def paged(rows: QuerySet, page: PageIn, shape: Callable[[Any], dict[str, Any]]) -> dict[str, Any]:
    """One page of ``rows`` (ordered), each through ``shape``. Two queries: the
    count and the page (plus the page's prefetches)."""
    return {"items": [shape(row) for row in rows[page.offset:page.offset + page.limit]], "count": rows.count(),
            "limit": page.limit, "offset": page.offset}
