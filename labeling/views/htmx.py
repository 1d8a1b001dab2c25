"""htmx fragments, one convention (STYLE §4): a view that serves a fragment of a page
reads ``request.htmx`` (django-htmx's middleware) and renders the page's template with
the fragment's partial name (django-template-partials), ``"labeling/run_sample.html#run-sample"``;
without htmx, the whole page. A fragment with out-of-band parts is one partial too
(``run_detail.html#run-summary-swap``, ``answer_review.html#claim-swap``)."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django_htmx.middleware import HtmxDetails


class HtmxHttpRequest(HttpRequest):
    """The request as ``django_htmx.middleware.HtmxMiddleware`` leaves it: ``htmx`` is
    truthy when htmx sent it (django-htmx's typing recipe)."""

    htmx: HtmxDetails


def page_or_partial(request: HtmxHttpRequest, template: str, partial: str, context: dict[str, Any]) -> HttpResponse:
    """The whole ``template``, or only its ``partial`` for htmx, which swaps that element in place."""
    return render(request, f"{template}#{partial}" if request.htmx else template, context)
