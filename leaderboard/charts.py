"""Geometry of the leaderboard's charts, drawn as inline SVG by a template (no JavaScript).

A grouped horizontal bar chart (``bar_chart``): one group per label, one bar per series with
its 95 % interval drawn across it where there is one, on a fixed axis per metric so charts stay
comparable: a signed metric's negative side only when a value (or an interval) goes below zero.
Ticks are labelled in the table's units (``Metric.shown``); a zero bar is still drawn, as a thin
mark. The slice chart (``slice_chart``): one group per slice value, one bar per leaderboard
entry (the first ``MAX_SERIES``); an entry's profile (``views/entry.py``): one group per row of
the benchmark's ``Profile``, one bar per series (MRAG-Suite: all items, image items, text items).
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape

from django.utils.safestring import SafeString, mark_safe

from evaluator.seam import Metric
from leaderboard.ranking import SliceCell, SliceTable

MAX_SERIES = 8
LABEL_WIDTH = 190
PLOT_WIDTH = 460
BAR_HEIGHT = 9
GROUP_GAP = 14
TOP = 24


def _n(number: float) -> str:
    """A coordinate as SVG reads it (never localised)."""
    return f"{number:.2f}"


@dataclass(frozen=True)
class Bar:
    series: int
    x: float
    y: float
    width: float
    title: str
    ci: tuple[float, float] | None = None  # the interval's ends, as x positions

    def svg(self) -> str:
        """The bar (and its interval) as SVG elements, escaped: built here, not by template
        lookups, as a chart has many bars."""
        rect = (
            f'<rect class="s{self.series}" x="{_n(self.x)}" y="{_n(self.y)}" '
            f'width="{_n(self.width)}" height="8"><title>{escape(self.title)}</title></rect>'
        )
        if self.ci is None:
            return rect
        middle = _n(self.y + 4)
        return (
            f'{rect}<line class="ci" x1="{_n(self.ci[0])}" x2="{_n(self.ci[1])}" '
            f'y1="{middle}" y2="{middle}"/>'
        )


@dataclass(frozen=True)
class Group:
    label: str
    y: float
    bars: list[Bar]

    def svg(self, plot_left: int) -> str:
        """The group's label and bars as SVG elements, escaped."""
        label = self.label if len(self.label) <= 28 else self.label[:27] + "…"
        x, y = plot_left - 6, _n(self.y + 9)
        text = f'<text x="{x}" y="{y}" text-anchor="end">{escape(label)}</text>'
        return text + "".join(bar.svg() for bar in self.bars)


@dataclass(frozen=True)
class Tick:
    x: float
    label: str


@dataclass(frozen=True)
class Chart:
    width: int
    height: int
    plot_left: int
    zero_x: float
    groups: list[Group]
    ticks: list[Tick]
    series: list[str]

    def groups_svg(self) -> SafeString:
        return mark_safe("".join(group.svg(self.plot_left) for group in self.groups))  # escaped


@dataclass(frozen=True)
class Point:
    """One bar's number, its 95 % interval where there is one, what its title adds."""

    value: float
    interval: tuple[float, float] | None = None
    note: str = ""  # e.g. "(n=12)"


def _axis(metric: Metric, points: list[Point]) -> tuple[float, float]:
    """The metric's fixed axis (``Metric.axis``; from 0 when nothing is negative), or from
    the lowest value (0 at most) to the largest (1 at least) for the rest."""
    fixed = metric.axis()
    if fixed is not None and fixed[0] >= 0:  # no value to read: it starts at its low end
        return fixed
    values = [n for p in points for n in (p.value, *(p.interval or ()))]
    if fixed is not None:
        low, high = fixed
        return (low if any(v < 0 for v in values) else 0.0), high
    return min([0.0, *values]), max([1.0, *values])


NUMBER = (int, float)


def cell_value(cell: SliceCell, metric: Metric) -> float | None:
    value = cell["metrics"].get(metric.name)
    return float(value) if isinstance(value, NUMBER) else None


def cell_interval(cell: SliceCell, metric: Metric) -> tuple[float, float] | None:
    ends = cell["metrics"].get(f"{metric.name}_ci95")
    # plain checks, no generator: a slice page reads ~2,600 intervals
    if (
        isinstance(ends, list | tuple)
        and len(ends) == 2
        and isinstance(ends[0], NUMBER)
        and isinstance(ends[1], NUMBER)
    ):
        return float(ends[0]), float(ends[1])
    return None


def bar_chart(
    metric: Metric, series: list[str], groups: list[tuple[str, list[Point | None]]]
) -> Chart:
    """Grouped bars on ``metric``'s axis: per group (a label), one bar per series that has a
    point (None: no bar), titled with the series' name and the point in the table's units."""
    low, high = _axis(metric, [p for _, points in groups for p in points if p is not None])

    def x(value: float) -> float:
        clipped = min(max(value, low), high)
        return LABEL_WIDTH + (clipped - low) / (high - low) * PLOT_WIDTH

    zero_x = x(0.0)
    drawn: list[Group] = []
    y = float(TOP)
    for label, points in groups:
        bars = []
        for index, point in enumerate(points):
            if point is None:
                continue
            left, right = sorted((zero_x, x(point.value)))
            title = f"{series[index]}: {metric.shown(point.value)}"
            ci = None
            if point.interval is not None:
                title += f" [{metric.shown(point.interval[0])}, {metric.shown(point.interval[1])}]"
                ci = (x(point.interval[0]), x(point.interval[1]))
            title += f" {point.note}" if point.note else ""
            top = y + index * BAR_HEIGHT
            bars.append(Bar(index, left, top, max(right - left, 2), title, ci))
        drawn.append(Group(label=label, y=y, bars=bars))
        y += len(series) * BAR_HEIGHT + GROUP_GAP
    ticks = [
        Tick(x(low + (high - low) * i / 4), metric.shown(low + (high - low) * i / 4))
        for i in range(5)
    ]
    return Chart(
        width=LABEL_WIDTH + PLOT_WIDTH + 20,
        height=int(y) + 10,
        plot_left=LABEL_WIDTH,
        zero_x=zero_x,
        groups=drawn,
        ticks=ticks,
        series=series,
    )


def _point(cell: SliceCell | None, metric: Metric) -> Point | None:
    number = cell_value(cell, metric) if cell is not None else None
    if cell is None or number is None:
        return None
    return Point(number, cell_interval(cell, metric), f"(n={cell['count']})")


def slice_chart(table: SliceTable, metric: Metric) -> Chart:
    """One group per slice value of ``table``, one bar per entry (the first ``MAX_SERIES``)."""
    rows = table.rows[:MAX_SERIES]
    groups = [
        (value, [_point(cells.get(value), metric) for _, cells in rows]) for value in table.values
    ]
    return bar_chart(metric, [entry.method_name for entry, _ in rows], groups)
