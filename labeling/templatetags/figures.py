"""The template filters that show figures (SPEC §4): ``|figure`` for a ratio or any
other value, ``|ci`` for an interval (SPEC §4.5), ``|level`` for its level. Every
number a page shows goes through ``scoring.ratio.format_value``, as the CLI, the
exports and the API's texts do: 1/8 reads ``0.13`` everywhere (half away from zero)."""

from __future__ import annotations

from django import template
from django.utils.html import format_html

from scoring.figures import FigureInterval, interval_text, interval_title
from scoring.intervals import Interval, PairedDifference
from scoring.ratio import format_value

register = template.Library()


@register.filter
def figure(value: float | None, digits: int = 2) -> str:
    """``{{ value|figure }}``: ``0.125`` → ``"0.13"``, ``None`` → ``"—"``
    (``scoring.ratio.format_value``); ``{{ value|figure:1 }}`` for one decimal. A
    variable the context lacks (``""``) reads ``"—"`` too."""
    return format_value(None if value == "" else value, int(digits))


@register.filter
def ci(interval: Interval | PairedDifference | FigureInterval | None) -> str:
    """``{{ interval|ci }}`` after the figure it belongs to: ``133/175 = 0.76`` then
    ``(0.64–0.85)``, with what the interval rests on as its tooltip
    (``scoring.figures.interval_text`` / ``interval_title``, built on
    ``scoring.ratio.format_value``). Nothing for an undefined figure."""
    if isinstance(interval, FigureInterval):
        interval = interval.interval
    text = interval_text(interval)
    if not text:
        return ""
    return format_html('<span class="ci" title="{}">{}</span>', interval_title(interval), text)


@register.filter
def level(confidence: float) -> str:
    """``0.95`` → ``"95%"``: an interval's level as the pages name it."""
    return f"{format_value(confidence * 100, 0)}%"
