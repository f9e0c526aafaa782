"""Geometry of the slice chart, drawn as inline SVG by a template (no JavaScript).

A grouped horizontal bar chart: one group per slice value, one bar per leaderboard entry
(the first ``MAX_SERIES`` entries), on a fixed axis per metric so charts stay comparable.
"""

from __future__ import annotations

from dataclasses import dataclass

from evaluator.protocols.base import Metric
from leaderboard.ranking import SliceTable

MAX_SERIES = 8
LABEL_WIDTH = 190
PLOT_WIDTH = 460
BAR_HEIGHT = 9
GROUP_GAP = 14
TOP = 24


@dataclass(frozen=True)
class Bar:
    series: int
    x: float
    y: float
    width: float
    title: str


@dataclass(frozen=True)
class Group:
    label: str
    y: float
    bars: list[Bar]


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


def _axis(metric: Metric, table: SliceTable) -> tuple[float, float]:
    """The metric's fixed axis (``Metric.axis``), or 0 to the largest value for the rest."""
    fixed = metric.axis()
    if fixed is not None:
        return fixed
    values = [_value(cell, metric) for _, cells in table.rows for cell in cells.values()]
    return 0.0, max([v for v in values if v is not None] + [1.0])


def _value(cell: dict, metric: Metric) -> float | None:
    value = cell["metrics"].get(metric.name)
    return float(value) if isinstance(value, int | float) else None


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
            number = _value(cell, metric) if cell is not None else None
            if cell is not None and number is not None:
                left, right = sorted((zero_x, x(number)))
                title = f"{entry.method_name}: {metric.shown(number)} (n={cell['count']})"
                bars.append(Bar(series, left, y + series * BAR_HEIGHT, max(right - left, 1), title))
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
