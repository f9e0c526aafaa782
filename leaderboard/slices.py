"""The stored slice scores of leaderboard entries: a table per slice dimension.

The slice page reads one metric and its interval a cell as numbers in SQL (``jsonb`` to
``float8``), not each cell's JSON: a page has a cell per entry and slice value (~1,300)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.db.models import FloatField
from django.db.models.expressions import RawSQL

from leaderboard.models import SliceScore
from leaderboard.models.results import ALL

if TYPE_CHECKING:
    from collections.abc import Sequence

    from leaderboard.entries import Entry

# A slice cell: the stored numbers of one entry for one slice value: {"count", "metrics"}.
SliceCell = dict[str, Any]

# A JSON value as a number, as ``charts.cell_value`` reads it (a boolean counts, as in
# Python); NULL for anything else. ``{}``: the path to it.
_NUMBER = """CASE jsonb_typeof(metrics {0})
    WHEN 'number' THEN (metrics {0})::float8
    WHEN 'boolean' THEN (metrics {0})::boolean::int::float8 END"""
# The interval's ends, only when it is a list of two numbers (``charts.cell_interval``).
_END = f"""CASE WHEN jsonb_typeof(metrics -> %s) = 'array'
    AND jsonb_array_length(metrics -> %s) = 2 THEN {_NUMBER.format("-> %s -> {0}")} END"""


def _value_order(value: str) -> tuple[int, int, str]:
    return (0, int(value), "") if value.isdigit() else (1, 0, value)


@dataclass(frozen=True)
class SliceTable:
    dimension: str
    values: list[str]
    rows: list[tuple[Entry, dict[str, SliceCell]]]  # per entry: slice value -> its cell


def metric_numbers(metric: str) -> tuple[RawSQL, RawSQL, RawSQL]:
    """The metric's value and its interval's low and high ends as numbers (NULL when not
    stored so)."""
    interval = f"{metric}_ci95"
    low, high = (RawSQL(_END.format(i), [interval] * 5, output_field=FloatField()) for i in (0, 1))
    return RawSQL(_NUMBER.format("-> %s"), [metric] * 3, output_field=FloatField()), low, high


def slice_table(
    leaderboard: Sequence[Entry], dimension: str, metric: str | None = None
) -> SliceTable:
    """The stored scores of each leaderboard entry for every value of ``dimension``: every
    metric, or only ``metric`` and its interval (``<metric>_ci95``), when they are numbers."""
    # a laddered entry publishes its released score alone: no slice of it is read
    by_run: dict[int, dict[str, SliceCell]] = {e.run_id: {} for e in leaderboard if not e.laddered}
    # unordered: the model's order by run would join every run of the site
    rows = SliceScore.objects.filter(run_id__in=list(by_run), dimension=dimension).order_by()
    if metric is None:
        for run_id, value, count, stored in rows.values_list("run_id", "value", "count", "metrics"):
            by_run[run_id][value] = {"run_id": run_id, "value": value, "count": count}
            by_run[run_id][value]["metrics"] = stored
    else:
        number_sql, low_sql, high_sql = metric_numbers(metric)
        read = rows.annotate(number=number_sql, low=low_sql, high=high_sql)
        interval = f"{metric}_ci95"
        for run_id, value, count, number, low, high in read.values_list(
            "run_id", "value", "count", "number", "low", "high"
        ):
            read_back: dict[str, Any] = {} if number is None else {metric: number}
            if low is not None and high is not None:
                read_back[interval] = [low, high]
            cell = {"run_id": run_id, "value": value, "count": count, "metrics": read_back}
            by_run[run_id][value] = cell
    values = sorted({v for cells in by_run.values() for v in cells}, key=_value_order)
    return SliceTable(
        dimension=dimension,
        values=values,
        rows=[(e, by_run.get(e.run_id, {})) for e in leaderboard],
    )


def entry_slices(entry: Entry) -> list[SliceTable]:
    """The entry's stored scores on every slice, one table (of one row) per dimension."""
    if entry.laddered:  # the Ladder publishes its released score alone
        return []
    cells: dict[str, dict[str, SliceCell]] = {}
    rows = (
        SliceScore.objects.filter(run_id=entry.run_id)
        .exclude(dimension=ALL[0])
        .values_list("dimension", "value", "count", "metrics")
    )
    for dimension, value, count, metrics in rows:
        cell = {"dimension": dimension, "value": value, "count": count, "metrics": metrics}
        cells.setdefault(dimension, {})[value] = cell
    return [
        SliceTable(name, sorted(cells[name], key=_value_order), [(entry, cells[name])])
        for name in sorted(cells)
    ]
