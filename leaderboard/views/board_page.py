"""A leaderboard as its pages read it: the stored board's order and ranks (one row,
``board_store.stored``), then the wide rows (texts, metrics) of the shown page's entries only.

A first view after the split's results changed thus ranks nothing and builds ~100 entries, not
the board's 1,000 (nor pickles them into the cache). Ranks, ties, entry rules and sort orders
are the full board's (``board_store.board``, ``board_table.sorted_entries``): the same stored
order, and a column's order by the same rule.
"""

from __future__ import annotations

from typing import Any

from django.db.models import F
from django.db.models.fields.json import KeyTransform
from django.http import HttpRequest

from leaderboard import board_store, permissions, public_board, ranking
from leaderboard.models import Headline, Split
from leaderboard.views.board_table import RANK, SUBMITTED, Sort, number, ordered


class Listing:
    """The board's entries in a page's order, read when sliced (a ``Paginator`` reads one
    page): its length is the board's."""

    def __init__(self, split: Split, setting: str, run_ids: list[int], places: list[ranking.Place]):
        self.split, self.setting, self.run_ids, self.places = split, setting, run_ids, places

    def __len__(self) -> int:
        return len(self.run_ids)

    def __getitem__(self, index: slice) -> list[ranking.Entry]:
        if not isinstance(index, slice):
            raise TypeError("a listing is read a page (a slice) at a time")
        run_ids, places = self.run_ids[index], self.places[index]
        return ranking.read_entries(self.split, self.setting, run_ids, places)


def _sort_values(runs: list[int], key: str) -> list[float | None]:
    """What ``board_table.sort_value`` orders each of ``runs`` by, read for the runs alone."""
    value: Any = (
        F("run__submission__created_at") if key == SUBMITTED else KeyTransform(key, "metrics")
    )
    rows = Headline.objects.filter(run_id__in=runs).annotate(value=value)
    by_run = dict(rows.values_list("run_id", "value"))
    if key == SUBMITTED:
        return [by_run[run].timestamp() for run in runs]
    return [number(by_run[run]) for run in runs]


def board(split: Split, setting: str, sort: Sort, raw: bool = False) -> ranking.Board:
    """``board_store.board(split, setting, raw)`` with its entries in ``sort``'s order
    (``board_table.sorted_entries``) as a ``Listing``: read a page at a time."""
    stored = (
        board_store.ranked(split, setting, public_board.Rules())
        if raw
        else board_store.stored(split, setting)
    )
    lines = list(zip(stored.runs, stored.places(), strict=True))
    # a laddered board is read in its order only: any other would follow the raw scores
    if sort.key != RANK and not stored.laddered:
        lines = ordered(lines, _sort_values(stored.runs, sort.key), sort.descending)
    derived, undefined = ranking.derived_scores(split, [] if stored.laddered else stored.runs)
    return ranking.Board(
        entries=Listing(split, setting, [run for run, _ in lines], [r for _, r in lines]),  # type: ignore[arg-type]
        dimensions=stored.dimensions,
        judges=stored.judges,
        setting=setting,
        derived=derived,
        undefined=undefined,
        statistics=stored.statistics,
    )


def raw_asked(request: HttpRequest, split: Split) -> bool:
    """Whether the page shows ``split``'s board without its public board's rules (a freeze,
    the Ladder): an organiser's ``?raw=1`` on a board that has some (``raw_wanted``)."""
    return raw_wanted(request.GET.get("raw"), request.user, split)


def raw_wanted(asked: str | None, user: permissions.User, split: Split) -> bool:
    """Whether ``raw=<asked>`` from ``user`` shows ``split``'s board without its public board's
    rules: ``1`` from an organiser (``permissions.can_see_raw_board``) on a board that has
    some; anyone else's is ignored (the page, the exports and the API alike)."""
    return (
        asked == "1"
        and public_board.rules(split) != public_board.Rules()
        and permissions.can_see_raw_board(user, split)
    )
