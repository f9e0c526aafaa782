"""A leaderboard as its pages read it when nothing is cached: the whole board's order and ranks
from narrow rows (run, primary value, baseline flag, judge, slice dimensions and the value the
page sorts by), then the wide rows (texts, metrics) of the shown page's entries only.

A first view after the split's results changed thus builds ~100 entries, not the board's
1,000 (nor pickles them into the cache). Ranks, ties, entry rules and sort orders are the full
board's (``ranking.board``, ``board_table.sorted_entries``): the same picking query, order and
rank rule, only fewer columns.
"""

from __future__ import annotations

from typing import Any

from django.db.models import F
from django.db.models.fields.json import KeyTransform

from leaderboard import ranking
from leaderboard.models import Split, Task
from leaderboard.views.board_table import RANK, SUBMITTED, Sort, number, ordered

# The narrow columns, in this order; then the sort's value, if any.
NARROW = ("run_id", "primary", ranking.BASELINE, "run__judge_id", "dimensions")
RUN, PRIMARY, BASELINE, JUDGE, DIMENSIONS, SUBMISSION = range(6)


class Listing:
    """The board's entries in a page's order, read when sliced (a ``Paginator`` reads one
    page): its length is the board's."""

    def __init__(self, split: Split, setting: str, run_ids: list[int], ranks: list[int | None]):
        self.split, self.setting, self.run_ids, self.ranks = split, setting, run_ids, ranks

    def __len__(self) -> int:
        return len(self.run_ids)

    def __getitem__(self, index: slice) -> list[ranking.Entry]:
        if not isinstance(index, slice):
            raise TypeError("a listing is read a page (a slice) at a time")
        run_ids, ranks = self.run_ids[index], self.ranks[index]
        return ranking.read_entries(self.split, self.setting, run_ids, ranks)


def _sort_value(row: tuple[Any, ...], key: str) -> float | None:
    if key == SUBMITTED:
        return row[-1].timestamp()
    return number(row[-1])


def board(split: Split, setting: str, sort: Sort) -> ranking.Board:
    """``ranking.board(split, setting)`` with its entries in ``sort``'s order
    (``board_table.sorted_entries``) as a ``Listing``: read a page at a time."""
    extra: dict[str, Any] = {}
    if sort.key == SUBMITTED:
        extra["sort_value"] = F("run__submission__created_at")
    elif sort.key != RANK:
        extra["sort_value"] = KeyTransform(sort.key, "metrics")
    rows = list(
        ranking.narrow_board_rows(split, setting)
        .annotate(**extra)
        .values_list(*NARROW, "run__submission_id", *extra)
    )
    shared = split.task.tie_rule == Task.TieRule.SHARED
    ranks = ranking.ranks(((row[PRIMARY], row[BASELINE]) for row in rows), shared)
    lines = list(zip(rows, ranks, strict=True))
    if extra:
        lines = ordered(lines, [_sort_value(row, sort.key) for row, _ in lines], sort.descending)
    submissions = [row[SUBMISSION] for row in rows]
    derived, undefined = ranking.derived_scores(split, submissions)
    return ranking.Board(
        entries=Listing(split, setting, [row[RUN] for row, _ in lines], [r for _, r in lines]),  # type: ignore[arg-type]
        dimensions=sorted({name for row in rows for name in row[DIMENSIONS]}),
        judges=sorted({row[JUDGE] for row in rows if row[JUDGE]}),
        setting=setting,
        derived=derived,
        undefined=undefined,
    )
