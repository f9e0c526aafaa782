"""The leaderboard table: its order (``?sort=<column>&dir=asc|desc``, checked against the
board's own columns), its sortable headers (plain links: no JavaScript needed) and its rows as
text, each entry's stored metrics decoded once.

The order is the board's (its ranks, by the task's rule) unless a column is asked for: then
every entry (baselines too) by that column, empty values last either way; the rank shown stays
the board's. A column's first click shows its best values first (``Metric.higher_is_better``),
the next one reverses it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from urllib.parse import urlencode

from django.http import Http404, QueryDict

from evaluator.protocols.base import Metric
from leaderboard.ranking import Entry

RANK = "rank"  # the board's own order
SUBMITTED = "submitted"  # by submission date
DIRECTIONS = ("asc", "desc")


@dataclass(frozen=True)
class Sort:
    key: str  # RANK, SUBMITTED, or a column's metric name
    descending: bool

    @property
    def query(self) -> str:
        """The sort as query parameters ("" for the board's own order)."""
        if self.key == RANK:
            return ""
        return urlencode({"sort": self.key, "dir": DIRECTIONS[self.descending]})


def _default_descending(key: str, columns: list[Metric]) -> bool:
    """Best first: a metric's better end, the newest submission."""
    metric = next((c for c in columns if c.name == key), None)
    return metric.higher_is_better if metric is not None else key == SUBMITTED


def asked_sort(query: QueryDict, columns: list[Metric]) -> Sort:
    """The order ``?sort=`` and ``?dir=`` ask for; 404 naming the valid choices if unknown."""
    key = query.get("sort") or RANK
    keys = [RANK, *(c.name for c in columns), SUBMITTED]
    if key not in keys:
        raise Http404(f"sort={key!r}: this leaderboard sorts by {', '.join(keys)}")
    if key == RANK:
        if query.get("dir"):
            raise Http404("dir= goes with sort=<column>: the ranks have one order")
        return Sort(RANK, False)
    direction = query.get("dir") or DIRECTIONS[_default_descending(key, columns)]
    if direction not in DIRECTIONS:
        raise Http404(f"dir={direction!r}: expected asc or desc")
    return Sort(key, direction == "desc")


def sorted_entries(entries: list[Entry], sort: Sort) -> list[Entry]:
    """``entries`` (in the board's order) in ``sort``'s order; ties keep the board's order."""
    if sort.key == RANK:
        return entries
    if sort.key == SUBMITTED:
        values: list[float | datetime | None] = [e.submitted_at for e in entries]
    else:
        values = [_number(e.metrics.get(sort.key)) for e in entries]
    present = [(v, e) for v, e in zip(values, entries, strict=True) if v is not None]
    present.sort(key=lambda pair: pair[0], reverse=sort.descending)  # type: ignore[arg-type, return-value]
    return [e for _, e in present] + [e for v, e in zip(values, entries, strict=True) if v is None]


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


@dataclass(frozen=True)
class Header:
    """A sortable column header: ``href`` a query string; ``aria_sort`` for the current one."""

    label: str
    href: str
    aria_sort: str  # "ascending", "descending" or "" (not sorted by it)
    numeric: bool


def headers(columns: list[Metric], sort: Sort, kept: str) -> dict[str, Header]:
    """The headers of the rank, metric and submission-date columns, by sort key; each link
    keeps ``kept`` (the setting's query) and goes to the first page."""
    labels = {RANK: "#", **{c.name: c.label for c in columns}, SUBMITTED: "Submitted"}
    result = {}
    for key, label in labels.items():
        current = sort.key == key
        if key == RANK:
            descending = False
        elif current:
            descending = not sort.descending
        else:
            descending = _default_descending(key, columns)
        query = Sort(key, descending).query
        href = "?" + "&".join(part for part in (kept, query) if part)
        aria = ("descending" if sort.descending else "ascending") if current else ""
        result[key] = Header(label, href, aria, key != SUBMITTED)
    return result


@dataclass(frozen=True)
class Row:
    """An entry as its leaderboard line shows it: one text per metric column, the primary
    metric's interval, the submission date."""

    entry: Entry
    cells: list[str]
    interval: str
    submitted: str


def rows(entries: list[Entry], columns: list[Metric]) -> list[Row]:
    primary = columns[0]
    result = []
    for entry in entries:
        metrics = entry.metrics
        interval = (
            f"[{primary.shown(entry.primary_ci_low)}, {primary.shown(entry.primary_ci_high)}]"
            if entry.primary_ci_low is not None and entry.primary_ci_high is not None
            else "–"
        )
        cells = [c.shown(_number(metrics.get(c.name))) for c in columns]
        result.append(Row(entry, cells, interval, f"{entry.submitted_at:%Y-%m-%d}"))
    return result
