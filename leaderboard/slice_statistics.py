"""Rank intervals, separable groups and the minimum detectable effect of each slice value of a
board (a slice dimension's table: one column per value), with the arithmetic of the whole
board's (``evaluator.board_stats.board_statistics``) on the units of that value alone, and the
scores calibrated by people's labels there (``leaderboard.slice_calibration``).

The entries taking part are the board's (``leaderboard.board_statistics``: ranked, scored, all
on the same units); a value's units are those every run's ``UnitSlices`` puts in it, and each
entry's score there is the mean of its units' values. Within a value the entries rank by that
score (the task's tie rule; equal ones keep the board's order), and the groups follow that
order. A dimension whose units do not nest (a multi-turn split's ``turn``: a conversation has
turns of several values) has none, and says why.

Computed once per version of the split's results, off the request, by the task a results change
sends, and stored (``leaderboard.slice_store``): ~0.3 s a value for 1,000 entries x 10,000
units (``docs/benchmarks.md``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from evaluator.board_stats import BoardStatistics, Correction, board_ranks, board_statistics
from leaderboard import board_store, slice_calibration
from leaderboard.board_statistics import correction, described
from leaderboard.entries import Place
from leaderboard.models import RunUnits, Split, Task
from leaderboard.models.units import decode
from leaderboard.unit_slices import slice_units


@dataclass(frozen=True)
class SliceValue:
    """One slice value's statistics: each taking-part entry's place there (by run), and how
    they were computed (or ``unavailable``: why not), with the value's minimum detectable
    effect; its calibration, when the split's audit labelled items there."""

    places: dict[int, Place] = field(default_factory=dict)
    statistics: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class SliceStatistics:
    """A dimension's statistics by value; ``unavailable``: why no value has rank intervals."""

    dimension: str
    values: dict[str, SliceValue]
    unavailable: str = ""

    def place(self, value: str, run: int) -> Place | None:
        found = self.values.get(value)
        return found.places.get(run) if found else None


# the board's taking-part runs, their units (entries x units) and their slices' digest
Units = tuple[list[int], np.ndarray, str]


def board_units(split: Split, setting: str) -> Units | str:
    """The ``Units`` of the board of ``split`` in ``setting``; or why there are none."""
    board = board_store.stored(split, setting)
    if "unavailable" in board.statistics:
        return str(board.statistics["unavailable"])
    taking_part = [i for i, low in enumerate(board.rank_low) if low is not None]
    runs = [board.runs[i] for i in taking_part]
    kept = RunUnits.objects.filter(run_id__in=runs)
    # the digests first (a few bytes a run): a board without slice values never reads the
    # values (40 kB a run at 10,000 units)
    digests = dict(kept.values_list("run_id", "slices"))
    if len(digests) != len(runs) or len(set(digests.values())) != 1 or "" in digests.values():
        return "the entries' units were kept without their slice values (scored again, they are)"
    stored = dict(kept.values_list("run_id", "values"))
    if len(stored) != len(runs):  # scored again meanwhile
        return "the entries' units changed while they were read"
    values = np.vstack([decode(bytes(stored[run])) for run in runs])
    return runs, values, digests[runs[0]]


def value_statistics(
    values: np.ndarray, higher: bool, shared: bool, adjusted: Correction = "holm"
) -> tuple[np.ndarray, np.ndarray, BoardStatistics]:
    """One slice value's entries (rows of ``values``, entries x its units, in the board's
    order) ranked by their means there: their order, their ranks in it, and the statistics of
    that board (``board_statistics``, entries in that order; its groups' tests corrected by
    ``adjusted``)."""
    means = values.mean(axis=1)
    order = np.argsort(-means if higher else means, kind="stable")
    observed = board_ranks(np.round(means[order], 10), higher, shared)
    return (
        order,
        observed,
        board_statistics(
            values[order], higher, shared, correction=adjusted, observed=observed.tolist()
        ),
    )


def _value(task: Task, runs: list[int], values: np.ndarray) -> SliceValue:
    """The statistics of one slice value from its units' values (entries x its units)."""
    if values.shape[1] < 2:
        return SliceValue(statistics={"unavailable": "fewer than two units in this value"})
    benchmark = task.scoring()
    higher = benchmark.metric(benchmark.primary).higher_is_better
    shared = task.tie_rule == Task.TieRule.SHARED
    order, observed, found = value_statistics(values, higher, shared, correction(task))
    places = {
        runs[i]: Place(int(observed[k]), found.rank_low[k], found.rank_high[k], found.groups[k])
        for k, i in enumerate(order)
    }
    return SliceValue(places, described(found, benchmark.primary))


def slice_statistics(
    split: Split, setting: str, dimension: str, known: Units | str | None = None
) -> SliceStatistics:
    """The statistics of every value of ``dimension`` on the board of ``split`` in
    ``setting``, with the calibrated scores of its values; ``known``: the board's units
    (``board_units``), when already read for another dimension."""
    calibrated = slice_calibration.calibrated(split, setting, dimension)
    read = board_units(split, setting) if known is None else known
    if isinstance(read, str):
        return SliceStatistics(dimension, _with({}, calibrated), read)
    runs, units, digest = read
    by_value = slice_units(digest, dimension)
    if isinstance(by_value, str):
        return SliceStatistics(dimension, _with({}, calibrated), by_value)
    found = {v: _value(split.task, runs, units[:, idx]) for v, idx in by_value.items()}
    return SliceStatistics(dimension, _with(found, calibrated))


def _with(
    found: dict[str, SliceValue], calibrated: dict[str, slice_calibration.SliceCalibration]
) -> dict[str, SliceValue]:
    """Each value's places and statistics with its calibrated scores beside them."""
    merged = dict(found)
    for value, there in calibrated.items():
        before = merged.get(value, SliceValue())
        places = dict(before.places)
        for run, (score, low, high) in there.scores.items():
            place = places.get(run, Place(None))
            places[run] = place._replace(calibrated=score, calibrated_low=low, calibrated_high=high)
        merged[value] = SliceValue(places, before.statistics | {"calibration": there.about})
    return merged
