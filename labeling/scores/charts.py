"""Pictures as server-side SVG geometry: the per-answer
coverage × support scatter of a run and the coverage / support / gap trend
across a project's runs.

The functions here turn metric rows into coordinates; the partials
``templates/labeling/_scatter.html`` and ``_runs_trend.html`` only draw them
(autoescaped, no JavaScript, no chart library). Coordinates are SVG user units
in the chart's ``viewBox``; every value shown is also in a ``<title>``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from labeling.exports import frames
from labeling.exports.structure import one_version
from labeling.models import Run
from labeling.scores.metrics import resolved_claims_frame
from labeling.tables.comparison import answer_review_url
from scoring.claims import ClaimMetrics, claim_metrics
from scoring.lazy import pd  # loaded on first use: keeps start-up fast (SPEC §7)
from scoring.ratio import format_value

# The four patterns of the seed "Measure Citation Coverage and Support"; a
# value ≥ QUADRANT_SPLIT counts as high.
QUADRANT_SPLIT = 0.5
QUADRANTS = {
    ("high", "low"): ("High coverage, low support", "cites everything, verifies nothing"),
    ("low", "high"): ("Low coverage, high support", "honest but under-cites"),
    ("high", "high"): ("High/high", "good citation hygiene"),
    ("low", "low"): ("Low/low", "largely ungrounded"),
}


@dataclass(frozen=True)
class Box:
    """The plot area: ``left``, ``top``, ``right``, ``bottom`` in SVG units."""

    left: float
    top: float
    right: float
    bottom: float

    @property
    def width(self) -> float:
        return self.right - self.left

    @property
    def height(self) -> float:
        return self.bottom - self.top


@dataclass(frozen=True)
class Tick:
    """A gridline at ``position`` (x for the x axis, y for the y axis) and its ``text``."""

    position: float
    text: str


@dataclass(frozen=True)
class Quadrant:
    """One labeled quadrant: rectangle ``x, y, width, height``; ``title`` and
    ``subtitle`` drawn from ``label_x, label_y`` with ``anchor`` (start/end)."""

    key: str
    x: float
    y: float
    width: float
    height: float
    title: str
    subtitle: str
    label_x: float
    label_y: float
    anchor: str


@dataclass(frozen=True)
class ScatterPoint:
    """Answers sharing one (coverage, support) value: centre ``cx, cy``,
    radius ``r`` (grows with ``count``), ``title`` (tooltip), ``url`` (the
    answer's review page when the point is one answer, else "")."""

    cx: float
    cy: float
    r: float
    count: int
    coverage: float
    support: float
    title: str
    url: str


@dataclass(frozen=True)
class NotPlotted:
    """An answer left out of the scatter because a ratio is undefined (SPEC §4)."""

    question_id: str
    answer_id: Any
    reason: str
    url: str


@dataclass(frozen=True)
class ScatterChart:
    """Geometry of the coverage (x) × support (y) scatter of one run's answers."""

    width: int
    height: int
    plot: Box
    split_x: float
    split_y: float
    x_ticks: list[Tick]
    y_ticks: list[Tick]
    quadrants: list[Quadrant]
    points: list[ScatterPoint]
    not_plotted: list[NotPlotted]
    answers: int
    caption: str

    @property
    def plotted(self) -> int:
        return sum(point.count for point in self.points)


def scatter_chart(
    rows: Iterable[Mapping[str, Any]], *, answer_url: Callable[[Any], str] | None = None, caption: str = "",
) -> ScatterChart:
    """Scatter geometry from per-answer metric rows.

    ``rows``: mappings with ``question_id``, ``answer_id``, ``coverage`` and
    ``support`` (floats in [0, 1] or ``None``) and optionally ``claims``,
    ``cited``, ``pending`` (ints, to say why a ratio is undefined) — e.g.
    ``ClaimMetrics.per_answer_records()``. Answers with an undefined coverage
    or support are listed in ``not_plotted`` instead. Answers at the same
    exact value share one point whose radius grows with the square root of
    their number. ``answer_url(answer_id)`` links points and listed answers.
    """
    width, height = 460, 440
    plot = Box(left=56, top=8, right=width - 14, bottom=height - 48)
    pad = 16  # keeps points at 0 and 1 (radius up to 16) inside the frame
    band = 34  # strips above support 1 and below support 0 hold the quadrant labels, clear of points

    def x_of(value: float) -> float:
        return round(plot.left + pad + value * (plot.width - 2 * pad), 2)

    def y_of(value: float) -> float:
        return round(plot.bottom - band - pad - value * (plot.height - 2 * band - 2 * pad), 2)

    link = answer_url or (lambda _answer_id: "")
    groups: dict[tuple[float, float], list[Mapping[str, Any]]] = {}
    not_plotted: list[NotPlotted] = []
    count = 0
    for row in rows:
        count += 1
        coverage, support = _number(row.get("coverage")), _number(row.get("support"))
        if coverage is None or support is None:
            not_plotted.append(NotPlotted(str(row["question_id"]), row["answer_id"], _why_undefined(row),
                                          link(row["answer_id"])))
            continue
        groups.setdefault((coverage, support), []).append(row)

    points = []
    for (coverage, support), members in sorted(groups.items(), key=lambda item: -len(item[1])):
        names = ", ".join(str(member["question_id"]) for member in members[:5])
        more = f" and {len(members) - 5} more" if len(members) > 5 else ""
        noun = "answer" if len(members) == 1 else "answers"
        points.append(ScatterPoint(
            cx=x_of(coverage), cy=y_of(support), r=round(min(4 + 2.2 * math.sqrt(len(members) - 1), 16), 2),
            count=len(members), coverage=coverage, support=support,
            title=f"{len(members)} {noun} ({names}{more}): coverage {format_value(coverage)}, "
                  f"support {format_value(support)}",
            url=link(members[0]["answer_id"]) if len(members) == 1 else "",
        ))

    split_x, split_y = x_of(QUADRANT_SPLIT), y_of(QUADRANT_SPLIT)
    quadrants = []
    for (cov, sup), (title, subtitle) in QUADRANTS.items():
        left = cov == "low"
        top = sup == "high"
        quadrants.append(Quadrant(
            key=f"{cov}-coverage-{sup}-support",
            x=plot.left if left else split_x, y=plot.top if top else split_y,
            width=(split_x - plot.left) if left else (plot.right - split_x),
            height=(split_y - plot.top) if top else (plot.bottom - split_y),
            title=title, subtitle=subtitle,
            label_x=plot.left + 6 if left else plot.right - 6,
            label_y=plot.top + 14 if top else plot.bottom - 19,
            anchor="start" if left else "end",
        ))
    ticks = [0, 0.25, 0.5, 0.75, 1]
    return ScatterChart(
        width=width, height=height, plot=plot, split_x=split_x, split_y=split_y,
        x_ticks=[Tick(x_of(t), format_value(t)) for t in ticks],
        y_ticks=[Tick(y_of(t), format_value(t)) for t in ticks],
        quadrants=quadrants, points=points, not_plotted=not_plotted, answers=count, caption=caption,
    )


@dataclass(frozen=True)
class TrendMarker:
    """One run's value of one series at ``x, y``, with its tooltip ``title``."""

    x: float
    y: float
    title: str


@dataclass(frozen=True)
class TrendWhisker:
    """A lone run's interval: a vertical line at ``x`` from ``y1`` (high) to ``y2`` (low)."""

    x: float
    y1: float
    y2: float


@dataclass(frozen=True)
class TrendSeries:
    """One metric across runs: ``segments`` are SVG ``points`` strings of the
    runs in a row whose value is defined (an undefined value breaks the line);
    ``bands`` the SVG ``points`` of the polygons of their intervals (SPEC §4.5:
    the upper bounds left to right, then the lower bounds back) over runs in a
    row that have one, ``whiskers`` the interval of a run with no neighbour."""

    key: str
    label: str
    segments: list[str]
    markers: list[TrendMarker]
    bands: list[str] = field(default_factory=list)
    whiskers: list[TrendWhisker] = field(default_factory=list)


@dataclass(frozen=True)
class TrendLabel:
    """A run's name under the x axis: the run sits at ``position``; the text is
    drawn with its anchor at ``x, y`` (``text-anchor`` ``anchor``), rotated by
    ``rotate`` degrees about that point, one ``lines`` item a line (level
    names wrap; turned ones are one line). ``text`` is what is drawn, joined;
    ``full`` the run's whole name (the label's tooltip). ``left``, ``right``
    and ``bottom`` are the text's estimated extent in chart units (see
    :func:`text_width`)."""

    position: float
    text: str
    x: float
    y: float
    anchor: str
    rotate: int
    left: float
    right: float
    bottom: float
    lines: tuple[str, ...] = ()
    full: str = ""


@dataclass(frozen=True)
class TrendChart:
    """Geometry of coverage / support / gap across a project's runs (Run.created_at order)."""

    width: int
    height: int
    plot: Box
    x_ticks: list[TrendLabel]
    y_ticks: list[Tick]
    zero_y: float | None
    series: list[TrendSeries]
    runs: int
    rotate_labels: bool


TREND_SERIES = (("coverage", "Coverage"), ("support", "Support"), ("gap", "Gap (coverage − support)"))
# The largest font-size static/css/app.css gives the trend's tick labels (on a
# phone, where the chart is drawn smaller), in chart units: label room is
# reserved for it, so the labels fit at every size the stylesheet uses.
TREND_TICK_FONT = 16
LABEL_ANGLE = 35  # degrees the run names turn (counter-clockwise) when there are more than 4 runs
# Level run names wrap at '-', '_', '.' or a space into lines of at most LINE_CHARS characters,
# at most LABEL_LINES lines; a turned name is one line of at most TURNED_CHARS characters. Only
# a longer name is cut (with "…"), and every label carries the whole name as its tooltip.
LINE_CHARS = 18
LABEL_LINES = 3
TURNED_CHARS = 32
LINE_HEIGHT = 1.2  # em, the spacing of a wrapped name's lines
_NARROW = frozenset(" .,:;'|!()[]{}ijlft-")
_WIDE = frozenset("mwMW@%…")


def text_width(text: str, font_size: float = TREND_TICK_FONT) -> float:
    """Estimated advance width of ``text`` in a sans-serif face at ``font_size``
    (chart units), erring wide: 0.62 em a character, 0.4 em for narrow ones
    (``i l . , -`` …), 0.95 em for wide ones (``m w M W …``) and other capitals 0.75 em."""
    def em(char: str) -> float:
        if char in _NARROW:
            return 0.4
        if char in _WIDE:
            return 0.95
        return 0.75 if char.isupper() else 0.62
    return sum(em(char) for char in text) * font_size


def label_lines(name: str, *, width: int = LINE_CHARS, lines: int = LABEL_LINES) -> tuple[str, ...]:
    """``name`` in lines of at most ``width`` characters, broken after ``-``,
    ``_``, ``.`` or a space (inside a longer part where it must), at most
    ``lines`` lines, the last ending in "…" when the name does not fit:
    ``"seed-coverage-support-v2"`` → ``("seed-coverage-", "support-v2")``."""
    parts = re.findall(r"[^-_. ]*[-_. ]|[^-_. ]+$", name) or [name]
    out: list[str] = []
    current = ""
    for part in parts:
        while len(part) > width:  # a part longer than a line: cut it where the line ends
            room = width - len(current)
            out.append(current + part[:room])
            current, part = "", part[room:]
        if len(current) + len(part) > width:
            out.append(current)
            current = part
        else:
            current += part
    if current:
        out.append(current)
    out = [line.rstrip(" ") for line in out if line.strip()]
    if len(out) > lines:
        out = out[:lines]
        out[-1] = _shorten(out[-1] + "…", width) if len(out[-1]) >= width else out[-1] + "…"
    return tuple(out)


def _run_label(position: float, name: str, *, bottom: float, rotate: bool) -> TrendLabel:
    """Place ``name`` under the run at ``position``; the plot's frame is at ``bottom``."""
    ascent, descent = 0.8 * TREND_TICK_FONT, 0.25 * TREND_TICK_FONT
    if not rotate:
        lines = label_lines(name)
        width = max(text_width(line) for line in lines)
        y = bottom + 6 + ascent
        last = y + (len(lines) - 1) * LINE_HEIGHT * TREND_TICK_FONT
        return TrendLabel(position, " ".join(lines), position, round(y, 2), "middle", 0,
                          left=round(position - width / 2, 2), right=round(position + width / 2, 2),
                          bottom=round(last + descent, 2), lines=lines, full=name)
    text = _shorten(name, TURNED_CHARS)
    width = text_width(text)
    # The text ends (text-anchor end) just right of and below the tick, and runs
    # up-right at LABEL_ANGLE, so it hangs down-left: its top-left corner is its
    # leftmost point, its bottom-left corner its lowest.
    cos, sin = math.cos(math.radians(LABEL_ANGLE)), math.sin(math.radians(LABEL_ANGLE))
    x, y = position + 4, bottom + 6 + ascent * cos
    return TrendLabel(position, text, round(x, 2), round(y, 2), "end", -LABEL_ANGLE,
                      left=round(x - width * cos - ascent * sin, 2), right=round(x + descent * sin, 2),
                      bottom=round(y + width * sin + descent * cos, 2), lines=(text,), full=name)


def trend_chart(rows: Iterable[Mapping[str, Any]]) -> TrendChart:
    """Line-chart geometry from one row per run, oldest first.

    ``rows``: mappings with ``run`` (name), ``coverage``, ``support``, ``gap``
    (floats or ``None``; coverage and support in [0, 1], gap in [−1, 1]) and
    optionally each one's interval as ``<key>_low``/``<key>_high`` (drawn as a
    band around the line, its bounds in the tooltips).
    The y axis runs from 1 down to 0, or lower in steps of 0.25 when a gap is
    negative. Run names are written whole: level names wrap into lines
    (:func:`label_lines`), turned ones (more than 4 runs, by LABEL_ANGLE) are
    cut only past TURNED_CHARS characters, and every name is the tooltip of
    its label; with more than 8 runs every k-th name is shown. The chart is 960 units wide
    (the page draws it at the card's width); the first and last runs move in
    from the plot's edges as far as their names need to stay inside it, and
    the bottom margin is as deep as the lowest name.
    """
    rows = list(rows)
    width, top, plot_height, margin = 960, 12, 220, 4
    rotate = len(rows) > 4
    every = max(1, math.ceil(len(rows) / 8))
    shown = {i: str(row["run"]) for i, row in enumerate(rows) if i % every == 0}

    values = [_number(row.get(f"{key}{end}")) for row in rows for key, _ in TREND_SERIES for end in ("", "_low")]
    lowest = min([value for value in values if value is not None] + [0.0])
    y_min = math.floor(lowest * 4) / 4
    y_max = 1.0
    y_values = [y_min + 0.25 * i for i in range(int(round((y_max - y_min) / 0.25)) + 1)]
    left = max(44.0, math.ceil(6 + max(text_width(format_value(v)) for v in y_values) + margin))

    # Where the first and last run may sit: inset by `pad`, and further in when a
    # name needs the room (x_i − extent_i ≥ margin; the last name's right end ≤ width − margin).
    pad, right = 24, width - 16
    probe = {i: _run_label(0.0, text, bottom=0.0, rotate=rotate) for i, text in shown.items()}
    reach_left = {i: -label.left for i, label in probe.items()}
    reach_right = {i: label.right for i, label in probe.items()}
    if len(rows) <= 1:
        xs = [round(left + (right - left) / 2, 2)]
    else:
        n = len(rows) - 1
        last = min(right - pad, width - margin - reach_right.get(n, 0.0))
        first = left + pad
        for i, reach in reach_left.items():
            if i < n:
                # first·(1 − i/n) + last·i/n ≥ margin + reach, solved for first.
                first = max(first, (margin + reach - last * i / n) / (1 - i / n))
        step = (last - first) / n
        xs = [round(first + i * step, 2) for i in range(len(rows))]
    bottom_room = max([label.bottom for label in probe.values()] + [0.0]) + margin
    plot = Box(left=left, top=top, right=right, bottom=top + plot_height)
    height = math.ceil(plot.bottom + bottom_room)

    def y_of(value: float) -> float:
        return round(plot.bottom - (value - y_min) / (y_max - y_min) * plot.height, 2)

    series = []
    for key, label in TREND_SERIES:
        segments: list[str] = []
        current: list[str] = []
        markers = []
        for x, row in zip(xs, rows, strict=False):
            value = _number(row.get(key))
            if value is None:
                if current:
                    segments.append(" ".join(current))
                current = []
                continue
            y = y_of(value)
            current.append(f"{x},{y}")
            low, high = _number(row.get(f"{key}_low")), _number(row.get(f"{key}_high"))
            interval = "" if low is None or high is None else f" ({_bound(low)}–{_bound(high)})"
            markers.append(TrendMarker(x, y, f"{row['run']}: {label.lower()} {format_value(value)}{interval}"))
        if current:
            segments.append(" ".join(current))
        bands, whiskers = _bands(key, xs, rows, y_of)
        series.append(TrendSeries(key=key, label=label, segments=segments, markers=markers, bands=bands,
                                  whiskers=whiskers))

    x_ticks = [_run_label(xs[i], text, bottom=plot.bottom, rotate=rotate) for i, text in shown.items()]
    y_ticks = [Tick(y_of(v), format_value(v)) for v in y_values]
    return TrendChart(
        width=width, height=height, plot=plot, x_ticks=x_ticks, y_ticks=y_ticks,
        zero_y=y_of(0.0) if y_min < 0 else None, series=series, runs=len(rows), rotate_labels=rotate,
    )


def _bands(key: str, xs: list[float], rows: list[Mapping[str, Any]],
           y_of: Callable[[float], float]) -> tuple[list[str], list[TrendWhisker]]:
    """The interval bands of one series: a polygon over each run of rows in a row whose
    value and interval are defined, a whisker for a lone one."""
    bands: list[str] = []
    whiskers: list[TrendWhisker] = []
    stretch: list[tuple[float, float, float]] = []

    def close() -> None:
        if len(stretch) == 1:
            x, high, low = stretch[0]
            whiskers.append(TrendWhisker(x, high, low))
        elif stretch:
            upper = [f"{x},{high}" for x, high, _ in stretch]
            lower = [f"{x},{low}" for x, _, low in reversed(stretch)]
            bands.append(" ".join(upper + lower))
        stretch.clear()

    for x, row in zip(xs, rows, strict=False):
        value, low, high = (_number(row.get(f"{key}{end}")) for end in ("", "_low", "_high"))
        if value is None or low is None or high is None:
            close()
            continue
        stretch.append((x, y_of(high), y_of(low)))
    close()
    return bands, whiskers


def _bound(value: float) -> str:
    return format_value(value) if value >= 0 else "−" + format_value(-value)


@one_version()
def run_scatter(run: Run, *, metrics: ClaimMetrics | None = None) -> ScatterChart:
    """The scatter of ``run``'s answers, from the resolved labels (the answers and
    ``resolved_claims_frame``'s other queries), or from ``metrics`` when
    the caller already scored the run (no query)."""
    if metrics is None:
        answers = frames.answers_frame(run)
        claims, _ = resolved_claims_frame(run, text=False, answers=answers)
        metrics = claim_metrics(
            claims[["answer_id", "question_id", "claim_index", "n_citations", "label", "abstention", "factual"]],
            answers[["answer_id", "question_id"]],
        )
    return scatter_chart(
        metrics.per_answer_records(), answer_url=_answer_url_for(run.project.slug, run.name),
        caption=f"Answers of run {run.name}",
    )


def trend_rows(run_rows: Iterable[Any]) -> list[dict[str, Any]]:
    """Rows for :func:`trend_chart` from the project page's run rows
    (``labeling.review.tallies.RunRow``: ``.run``, ``.counts`` with ``coverage``,
    ``support`` Ratios and ``gap``, and ``.intervals``), so the chart shows the
    very figures of the runs table with their intervals (SPEC §4.5), in its order
    (``Run.created_at``), without another query."""
    rows = []
    for row in run_rows:
        shown = {"run": row.run.name, "coverage": row.counts.coverage.value, "support": row.counts.support.value,
                 "gap": row.counts.gap}
        intervals = row.intervals
        for key, _label in TREND_SERIES:
            interval = intervals[key].interval if key in intervals else None
            if interval is not None and interval.defined:
                shown[f"{key}_low"], shown[f"{key}_high"] = interval.low, interval.high
        rows.append(shown)
    return rows


def _answer_url_for(project_slug: str, run_name: str) -> Callable[[Any], str]:
    def url(answer_id: Any) -> str:
        return answer_review_url(project_slug=project_slug, run_name=run_name, answer_id=answer_id)

    return url


def _number(value: Any) -> float | None:
    if value is None or value is pd.NA:
        return None
    value = float(value)
    return None if math.isnan(value) else value


def _why_undefined(row: Mapping[str, Any]) -> str:
    if _number(row.get("coverage")) is None:
        return "no factual claims (empty answer or abstention)"
    if not row.get("cited", 1):
        return "no cited claim: support undefined"
    if row.get("pending"):
        return f"support pending: {row['pending']} cited claim(s) unlabeled"
    return "support undefined"


def _shorten(text: str, limit: int = 16) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
