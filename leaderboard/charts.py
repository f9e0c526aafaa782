"""Geometry of the slice chart, drawn as inline SVG by a template (no JavaScript).

A grouped horizontal bar chart: one group per slice value, one bar per leaderboard entry
(the first ``MAX_SERIES`` entries) with its 95 % interval drawn across it where the metric has
one, on a fixed axis per metric so charts stay comparable: a signed metric's negative side only
when a value (or an interval) goes below zero. Ticks are labelled in the table's units
(``Metric.shown``); a zero bar is still drawn, as a thin mark.
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape

from django.utils.safestring import SafeString, mark_safe

from evaluator.protocols.base import Metric
from leaderboard.ranking import SliceTable

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


def _axis(metric: Metric, table: SliceTable) -> tuple[float, float]:
    """The metric's fixed axis (``Metric.axis``; from 0 when nothing is negative), or from
    the lowest value (0 at most) to the largest (1 at least) for the rest."""
    values = (
        number
        for _, cells in table.rows
        for cell in cells.values()
        for number in (cell_value(cell, metric), *(cell_interval(cell, metric) or ()))
        if number is not None
    )
    fixed = metric.axis()
    if fixed is not None:
        low, high = fixed
        if low >= 0:  # no value to read: the axis starts at its low end either way
            return low, high
        return (low if any(v < 0 for v in values) else 0.0), high  # read to the first < 0
    read = list(values)
    return min([0.0, *read]), max([1.0, *read])


NUMBER = (int, float)


def cell_value(cell: dict, metric: Metric) -> float | None:
    value = cell["metrics"].get(metric.name)
    return float(value) if isinstance(value, NUMBER) else None


def cell_interval(cell: dict, metric: Metric) -> tuple[float, float] | None:
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


def slice_chart(table: SliceTable, metric: Metric) -> Chart:
    rows = table.rows[:MAX_SERIES]
    low, high = _axis(metric, table)

    def x(value: float) -> float:
        clipped = min(max(value, low), high)
        return LABEL_WIDTH + (clipped - low) / (high - low) * PLOT_WIDTH

    zero_x = x(0.0)
    groups: list[Group] = []
    y = float(TOP)
    for value in table.values:
        bars = []
        for series, (entry, cells) in enumerate(rows):
            cell = cells.get(value)
            number = cell_value(cell, metric) if cell is not None else None
            if cell is not None and number is not None:
                left, right = sorted((zero_x, x(number)))
                interval = cell_interval(cell, metric)
                shown = f"{entry.method_name}: {metric.shown(number)}"
                if interval is not None:
                    shown += f" [{metric.shown(interval[0])}, {metric.shown(interval[1])}]"
                title = f"{shown} (n={cell['count']})"
                ci = (x(interval[0]), x(interval[1])) if interval is not None else None
                top = y + series * BAR_HEIGHT
                bars.append(Bar(series, left, top, max(right - left, 2), title, ci))
        groups.append(Group(label=value, y=y, bars=bars))
        y += len(rows) * BAR_HEIGHT + GROUP_GAP
    ticks = [
        Tick(x(low + (high - low) * i / 4), metric.shown(low + (high - low) * i / 4))
        for i in range(5)
    ]
    return Chart(
        width=LABEL_WIDTH + PLOT_WIDTH + 20,
        height=int(y) + 10,
        plot_left=LABEL_WIDTH,
        zero_x=zero_x,
        groups=groups,
        ticks=ticks,
        series=[entry.method_name for entry, _ in rows],
    )
