"""A slice dimension's table as plain data, the one shape of the API's
``/api/splits/<id>/slices/`` and the slice exports: per entry (the board's, in its order) a
cell per slice value with its stored scores and, beside them, its place among that value's
entries (``leaderboard.slice_statistics``: rank, rank interval, group, calibrated score);
per value, how those were computed (its minimum detectable effect) or why there are none."""

from __future__ import annotations

from typing import Any

from leaderboard import slice_store
from leaderboard.entries import Entry, Place
from leaderboard.models import Split
from leaderboard.slices import SliceCell, slice_table


def _cell(cell: SliceCell, place: Place | None) -> dict[str, Any]:
    found = place or Place(None)
    calibrated = (
        None
        if found.calibrated is None
        else {"value": found.calibrated, "ci95": [found.calibrated_low, found.calibrated_high]}
    )
    return {
        "count": cell["count"],
        "metrics": cell["metrics"],
        "rank": found.rank,
        "rank_ci95": [found.rank_low, found.rank_high],
        "group": found.group,
        "calibrated": calibrated,
    }


def slice_records(
    split: Split, setting: str, dimension: str, entries: list[Entry]
) -> dict[str, Any]:
    """The table of ``dimension`` on the board of ``split`` in ``setting`` (``entries``:
    its entries, in its order) as plain data."""
    table = slice_table(entries, dimension)
    statistics = slice_store.read(split, setting, dimension)
    return {
        "dimension": dimension,
        "values": table.values,
        "unavailable": statistics.unavailable or None,
        "statistics": {value: found.statistics for value, found in statistics.values.items()},
        "entries": [
            {
                "rank": entry.rank,
                "team": entry.team,
                "method_name": entry.method_name,
                "is_baseline": entry.is_baseline,
                "submission_id": entry.submission_id,
                "run_id": entry.run_id,
                "slices": {
                    value: _cell(cell, statistics.place(value, entry.run_id))
                    for value, cell in sorted(cells.items())
                },
            }
            for entry, cells in table.rows
        ],
    }
