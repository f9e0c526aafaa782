"""A board's rank intervals, separable groups and minimum detectable effect, computed with its
ranking when its split's results change (``board_store.ranked``), from the ranked entries'
stored units (``RunUnits``, kept by ``scores.store_scores``); the arithmetic is
``evaluator.board_stats``'s.

Only entries with a rank and a score take part: baselines (no rank) and incomplete results
(ranked last, no score) get no interval nor group. A board whose scored entries do not all
have units on the same units (runs scored before units were kept), or whose primary metric is
not the benchmark's paired metric, gets none, with the reason in its ``statistics``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from evaluator.board_stats import (
    CORRECTIONS,
    POWER,
    BoardStatistics,
    Correction,
    Rectified,
    board_statistics,
)
from leaderboard.models import RunUnits, Task
from leaderboard.models.units import decode

# a task's ``multiple_comparisons`` as the arithmetic names it, and as a page says it
_CORRECTION: dict[str, Correction] = {name: name for name in CORRECTIONS}
SHOWN_CORRECTION = {
    "holm": "Holm's correction",
    "bonferroni": "Bonferroni's correction",
    "none": "no correction for multiple comparisons",
}


def correction(task: Task) -> Correction:
    """How the task's boards' paired tests are corrected together (its
    ``multiple_comparisons``)."""
    return _CORRECTION[task.multiple_comparisons]


@dataclass(frozen=True)
class Beside:
    """What a board stores beside its ranks: per entry (in the board's order) its rank
    interval and group (None where it has none), and how they were computed."""

    rank_low: list[int | None]
    rank_high: list[int | None]
    groups: list[int | None]
    statistics: dict[str, Any] = field(default_factory=dict)


def _none(size: int, reason: str) -> Beside:
    return Beside([None] * size, [None] * size, [None] * size, {"unavailable": reason})


def beside(
    task: Task,
    runs: Sequence[int],
    ranks: Sequence[int | None],
    scores: Sequence[float | None],
    by_people: Rectified | None = None,
) -> Beside:
    """Rank intervals, groups and the minimum detectable effect of the board whose entries'
    ``runs`` have these ``ranks`` and primary ``scores``, in the board's order (``by_people``:
    ranked by the scores calibrated by people's labels, every entry's shares of the verdicts
    and the labels' corrections: ``leaderboard.calibration.rectified``)."""
    size = len(runs)
    taking_part = [i for i in range(size) if ranks[i] is not None and scores[i] is not None]
    if not taking_part:
        return _none(size, "no ranked entry has a score yet")
    benchmark = task.scoring()
    if benchmark.primary != task.primary_metric:
        return _none(
            size,
            f"the board ranks by {task.primary_metric}; rank intervals and groups are computed "
            f"on {benchmark.primary}, the metric the benchmark pairs runs on",
        )
    wanted = [runs[i] for i in taking_part]
    stored = dict(
        RunUnits.objects.filter(run_id__in=wanted, metric=benchmark.primary).values_list(
            "run_id", "values"
        )
    )
    missing = sum(run not in stored for run in wanted)
    if missing:
        return _none(size, f"{missing} entries were scored before Podium kept their units")
    values = [decode(bytes(stored[run])) for run in wanted]
    if len({len(row) for row in values}) != 1 or len(values[0]) < 2:
        return _none(size, "the entries were not scored on the same two or more units")
    higher = benchmark.metric(benchmark.primary).higher_is_better
    found = board_statistics(
        np.vstack(values),
        higher_is_better=higher,
        shared=task.tie_rule == Task.TieRule.SHARED,
        correction=correction(task),
        observed=[int(ranks[i] or 0) for i in taking_part],
        rectified=None
        if by_people is None
        else Rectified(by_people.shares[taking_part], by_people.corrections),
    )
    low: list[int | None] = [None] * size
    high: list[int | None] = [None] * size
    groups: list[int | None] = [None] * size
    for position, i in enumerate(taking_part):
        low[i], high[i] = found.rank_low[position], found.rank_high[position]
        groups[i] = found.groups[position]
    about = described(found, benchmark.primary)
    if by_people is not None:
        about["calibrated"] = True  # ranked by, and resampled with, people's corrections
    return Beside(low, high, groups, about)


def described(found: BoardStatistics, metric: str) -> dict[str, Any]:
    """How a board's (or a slice value's) statistics were computed, with its minimum
    detectable effect: what its ``statistics`` say."""
    return {
        "units": found.units,
        "confidence": found.confidence,
        "alpha": found.alpha,
        "correction": found.correction,
        "n_boot": found.n_boot,
        "power": POWER,
        "minimum_detectable_effect": found.minimum_detectable_effect,
        "metric": metric,
    }
