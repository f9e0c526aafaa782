"""The ranked boards as stored: each split's leaderboard in each setting of its task, ranked
when the split's results change and read by every page, export and the API.

``results_changed`` is the one call every change of what a board shows makes (stored
scores, a run entering or leaving ``done``, a submission's flags or texts, a team's name, a
task's rules, a deleted run); it bumps the split's ``results_version`` and calls ``rebuild``
in the same transaction, after that update has locked the split's row. Two changes of one
split thus rank one after the other, each seeing what the other committed, and a board is
never older than the scores it ranks.

Once the change commits, a split whose runs' units carry slice values gets the task that
computes and stores its per-slice statistics for the new version (``SLICE_STATISTICS_TASK``,
``leaderboard.slice_store``): seconds at 1,000 entries, too slow for this transaction.

A board is one row (``RankedBoard``): its entries' runs in the board's order with their ranks,
and the slice dimensions and judges behind them. Ranking it is ``ranking.narrow_board_rows``
(one run per team by the task's rule, every baseline, in the board's order) and
``ranking.ranks``; reading a page is that row, then its ~100 entries' headline rows
(``ranking.read_entries``). A board never stored (a split whose results have not changed since
the table exists) is ranked and stored by its first read.
"""

from __future__ import annotations

import dataclasses
import uuid
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.utils import timezone

from leaderboard import board_statistics, calibration, public_board, ranking, repeats
from leaderboard.dispatch import send_after_commit
from leaderboard.models import RankedBoard, RunUnits, Split, Task

STORED = (
    "runs", "ranks", "dimensions", "judges", "rank_low", "rank_high", "groups", "statistics",
    "calibrated", "released", "repeated",
)  # fmt: skip
# computes and stores a split's per-slice statistics (``slice_store.store_all``); the default queue
SLICE_STATISTICS_TASK = "boards.store_slice_statistics"


@dataclass(frozen=True)
class Ranked:
    """A board's order: its entries' runs, their ranks (None: a baseline), the slice
    dimensions and judges behind them; beside them, each entry's rank interval and group
    (None: none) and how they were computed, with the split's minimum detectable effect
    (``leaderboard.board_statistics``)."""

    runs: list[int]
    ranks: list[int | None]
    dimensions: list[str]
    judges: list[str]
    rank_low: list[int | None]
    rank_high: list[int | None]
    groups: list[int | None]
    statistics: dict[str, Any]
    calibrated: list[list[float] | None]  # [value, low, high]: ``leaderboard.calibration``
    # [released score] on a laddered board, else None (``leaderboard.public_board``)
    released: list[list[float | None] | None] = dataclasses.field(default_factory=list)
    # the repeated runs' statistics, or how many are done, or None: ``leaderboard.repeats``
    repeated: list[dict[str, Any] | None] = dataclasses.field(default_factory=list)

    def places(self) -> list[ranking.Place]:
        """Each entry's rank, rank interval and group, in the board's order."""
        beside = zip(self.rank_low, self.rank_high, self.groups, self.calibrated, strict=True)
        released = self.released or [None] * len(self.runs)
        repeated = self.repeated or [None] * len(self.runs)  # a board stored before them: []
        places = []
        for rank, (low, high, group, calibrated), published, again in zip(
            self.ranks, beside, released, repeated, strict=True
        ):
            value, value_low, value_high = calibrated or (None, None, None)
            place = ranking.Place(rank, low, high, group, value, value_low, value_high)
            place = place._replace(repeated=again)
            if published is not None:
                place = place._replace(laddered=True, released=published[0])
            places.append(place)
        return places

    @property
    def laddered(self) -> bool:
        return any(r is not None for r in self.released)


def ranked(split: Split, setting: str, public: public_board.Rules | None = None) -> Ranked:
    """The board of ``split`` in ``setting`` ranked now, from its headlines, under the public
    board's rules ``public`` (``leaderboard.public_board``: a freeze, the Ladder; default: those
    of now; ``Rules()``: none, the board organisers read raw)."""
    if public is None:
        public = public_board.rules(split)
    if public.threshold is not None:
        return _laddered(split, setting, public)
    rows = list(
        ranking.narrow_board_rows(split, setting, public.before).values_list(
            "run_id", "primary", ranking.BASELINE, "run__judge_id", "dimensions"
        )
    )
    task = split.task
    shared = task.tie_rule == Task.TieRule.SHARED  # else the earlier submission first
    scores = [row[1] for row in rows]
    people = calibration.rectifier(split)
    calibrated, about = calibration.calibrated(
        [row[0] for row in rows], [row[3] for row in rows], scores, people
    )
    by_people = bool(about) and task.ranked_by == Task.RankedBy.CALIBRATED
    if by_people:  # the calibrated score ranks (the judge's where there is none)
        keys = [c[0] if c else s for c, s in zip(calibrated, scores, strict=True)]
        order = ranking.by_score(keys, ranking.descending(task))
        rows, calibrated = [rows[i] for i in order], [calibrated[i] for i in order]
        scores = [keys[i] for i in order]
    runs = [row[0] for row in rows]
    ranks = ranking.ranks(zip(scores, (row[2] for row in rows), strict=True), shared)
    rectified = (
        calibration.rectified(people, runs, [c is not None for c in calibrated])
        if by_people and people is not None
        else None
    )
    stats = board_statistics.beside(task, runs, ranks, scores, rectified)
    repeated, about_repeats = repeats.beside(split, setting, runs)
    return Ranked(
        runs=runs,
        ranks=ranks,
        dimensions=sorted({name for row in rows for name in row[4]}),
        judges=sorted({row[3] for row in rows if row[3]}),
        rank_low=stats.rank_low,
        rank_high=stats.rank_high,
        groups=stats.groups,
        statistics=stats.statistics
        | ({"calibration": about | {"ranks": by_people}} if about else {})
        | ({"repeats": about_repeats} if about_repeats else {})
        | public.statistics(),
        calibrated=calibrated,
        repeated=repeated,
    )


def _laddered(split: Split, setting: str, public: public_board.Rules) -> Ranked:
    """The board ranked by the Ladder's released scores: nothing computed from raw scores
    (no slices, rank intervals, groups nor calibrated scores) lies beside them."""
    board = public_board.laddered(split, setting, public)
    none: list[Any] = [None] * len(board.runs)
    return Ranked(
        runs=board.runs, ranks=board.ranks, dimensions=[], judges=board.judges,
        rank_low=none, rank_high=none, groups=none, statistics=public.statistics(),
        calibrated=none, released=[[value] for value in board.released],
    )  # fmt: skip


def _store(split: Split, boards: dict[str, Ranked], replace: bool) -> None:
    """Write ``boards`` (by setting): replacing stored ones, or leaving them (``replace``
    False: a read storing a board it ranked, which a concurrent change may have stored)."""
    rows = [
        RankedBoard(split=split, setting=setting, **{name: getattr(board, name) for name in STORED})
        for setting, board in boards.items()
    ]
    if replace:
        RankedBoard.objects.bulk_create(
            rows, update_conflicts=True, unique_fields=["split", "setting"], update_fields=STORED
        )
    else:
        RankedBoard.objects.bulk_create(rows, ignore_conflicts=True)


def results_changed(*split_ids: int) -> None:
    """Give these splits a new ``results_version`` (pages render their results afresh) and
    rank their stored boards again, in the caller's transaction: the update locks the
    splits' rows, so changes of one split rank one after the other. After the commit, the
    task storing their per-slice statistics is sent for those with slice values."""
    version = uuid.uuid4()
    with transaction.atomic():
        Split.objects.filter(pk__in=split_ids).update(results_version=version)
        rebuild(*split_ids)
        sliced = list(
            RunUnits.objects.filter(run__split_id__in=split_ids)
            .exclude(slices="")
            .order_by()
            .values_list("run__split_id", flat=True)
            .distinct()
        )
        Split.objects.filter(pk__in=sliced).update(slice_statistics_due_at=timezone.now())
        for split_id in sliced:
            send_slice_statistics(split_id, version)


def send_slice_statistics(split_id: int, version: uuid.UUID | str) -> None:
    """Send, after the commit, the task storing the split's per-slice statistics for
    ``version``."""
    send_after_commit(
        SLICE_STATISTICS_TASK,
        {"split_id": split_id, "results_version": str(version)},
        f"split #{split_id}'s slice statistics (the reaper sends it again)",
    )


def rebuild(*split_ids: int) -> None:
    """Rank and store the boards of these splits in every setting of their tasks; boards of
    settings a task no longer has go. Call it inside the transaction of the change, after
    locking the splits' rows (``results_changed`` does both)."""
    for split in Split.objects.filter(pk__in=split_ids).select_related("task"):
        settings = split.task.run_settings()
        _store(split, {setting: ranked(split, setting) for setting in settings}, replace=True)
        RankedBoard.objects.filter(split=split).exclude(setting__in=settings).delete()


def stored(split: Split, setting: str) -> Ranked:
    """The stored board of ``split`` in ``setting`` (one indexed row); ranked and stored
    here if it never was."""
    found = RankedBoard.objects.filter(split=split, setting=setting).values_list(*STORED)[:1]
    if found:
        return Ranked(*found[0])
    board = ranked(split, setting)
    _store(split, {setting: board}, replace=False)
    return board


def board(split: Split, setting: str = "", raw: bool = False) -> ranking.Board:
    """The whole leaderboard of ``split`` in ``setting`` (the task's settings,
    ``Task.run_settings``; "" for a benchmark without settings): one entry per team by the
    task's rule, plus every baseline, ranked by the task's primary metric (incomplete results
    last); equal scores share a rank, or by the task's ``tie_rule`` the earlier submission
    ranks first. With the entries' slice dimensions, judges and scores across settings.
    ``raw``: ranked now without the public board's rules, never stored (organisers only:
    ``permissions.can_see_raw_board``)."""
    ranked_ = ranked(split, setting, public_board.Rules()) if raw else stored(split, setting)
    # scores across settings are the raw scores': none beside a laddered board
    runs = [] if ranked_.laddered else ranked_.runs
    derived, undefined = ranking.derived_scores(split, runs)
    return ranking.Board(
        entries=ranking.read_entries(split, setting, ranked_.runs, ranked_.places()),
        dimensions=ranked_.dimensions,
        judges=ranked_.judges,
        setting=setting,
        derived=derived,
        undefined=undefined,
        statistics=ranked_.statistics,
    )


def entries(split: Split, setting: str = "") -> list[ranking.Entry]:
    """``board(split, setting)``'s entries."""
    ranked_ = stored(split, setting)
    return ranking.read_entries(split, setting, ranked_.runs, ranked_.places())
