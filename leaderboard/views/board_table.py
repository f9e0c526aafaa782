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
from html import escape
from typing import Any, TypeVar
from urllib.parse import urlencode

from django.http import Http404, QueryDict
from django.utils.safestring import SafeString, mark_safe

from evaluator.seam import Metric
from leaderboard import repeats
from leaderboard.board_statistics import SHOWN_CORRECTION
from leaderboard.ranking import Entry

RANK = "rank"  # the board's own order
SUBMITTED = "submitted"  # by submission date
DIRECTIONS = ("asc", "desc")
T = TypeVar("T")
ENTRY_TITLE = "this entry's slices"  # an entry link's title on the leaderboard


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
    return ordered(entries, [sort_value(e, sort.key) for e in entries], sort.descending)


def sort_value(entry: Entry, key: str) -> float | None:
    """What ``sort`` (not RANK) orders ``entry`` by: its submission time or a metric's number."""
    if key == SUBMITTED:
        return entry.submitted_at.timestamp()
    return number(entry.metrics.get(key))


def ordered(items: list[T], values: list[float | None], descending: bool) -> list[T]:
    """``items`` by their ``values`` (a stable sort: ties keep their order), None last."""
    present = [(v, item) for v, item in zip(values, items, strict=True) if v is not None]
    present.sort(key=lambda pair: pair[0], reverse=descending)
    return [item for _, item in present] + [
        item for v, item in zip(values, items, strict=True) if v is None
    ]


def number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


@dataclass(frozen=True)
class Header:
    """A sortable column header: ``href`` a query string; ``aria_sort`` for the current one."""

    label: str
    href: str
    aria_sort: str  # "ascending", "descending" or "" (not sorted by it)


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
        result[key] = Header(label, href, aria)
    return result


@dataclass(frozen=True)
class Row:
    """An entry as its leaderboard line shows it: one text per metric column, the primary
    metric's interval, the submission date, the link to the entry's page."""

    entry: Entry
    cells: list[str]
    interval: str
    submitted: str
    href: str = ""
    calibrated: str | None = None  # the calibrated score's cell text; None: no such column
    repeated: str = ""  # its repeated runs' mean, interval, sd, pass^k (``leaderboard.repeats``)

    @property
    def submitted_iso(self) -> str:
        return self.entry.submitted_at.isoformat()

    def metric_tds(self) -> SafeString:
        """The metric cells, the interval's after the first: built here, not by template
        lookups (100 rows a page). Their texts are numbers ``Metric.shown`` formatted, or a
        dash: nothing in them to escape."""
        texts = [self.cells[0], self.interval, *self.cells[1:]]
        if self.calibrated is not None:
            texts.insert(2, self.calibrated)
        return mark_safe("".join(f'<td class="num">{text}</td>' for text in texts))

    def tr(self) -> SafeString:
        """The leaderboard line, escaped: built here, not by template lookups."""
        entry = self.entry
        links = "".join(
            f' · <a href="{escape(url)}" rel="nofollow noopener">{name}</a>'
            for name, url in (("paper", entry.paper_url), ("code", entry.code_url))
            if url
        )
        if not entry.complete:
            links += f'<span class="badge failed">incomplete: {entry.unjudged} unjudged</span>'
        if self.repeated:
            links += f'<div class="muted repeated">{escape(self.repeated)}</div>'
        group = (
            f' data-group="{entry.group}" class="group-{entry.group % 2}"' if entry.group else ""
        )
        return mark_safe(
            f'<tr data-team="{entry.team_id}"{group}>{rank_td(entry)}'
            f'<td class="team">{escape(entry.team)}</td>'
            f'<td><a class="entry" href="{escape(self.href)}" title="{ENTRY_TITLE}">'
            f"{escape(entry.method_name)}</a>{links}</td>"
            f'{self.metric_tds()}<td class="num">{entry.count}</td>'
            f'<td><time datetime="{self.submitted_iso}">{self.submitted}</time></td></tr>\n'
        )


def _calibrated(entry: Entry, primary: Metric) -> str:
    if entry.calibrated is None:
        return "–"
    low, high = primary.shown(entry.calibrated_low), primary.shown(entry.calibrated_high)
    return f"{primary.shown(entry.calibrated)} [{low}, {high}]"


def rank_td(entry: Entry) -> str:
    if not entry.rank:
        return '<td><span class="badge baseline">baseline</span></td>'
    if entry.rank_low is None or entry.rank_high is None:
        return f"<td>{entry.rank}</td>"
    interval = (
        str(entry.rank_low)
        if entry.rank_low == entry.rank_high
        else f"{entry.rank_low}–{entry.rank_high}"
    )
    shown = f'<span class="muted rank-interval" title="{RANK_TITLE}">({interval})</span>'
    return f"<td>{entry.rank} {shown}</td>"


RANK_TITLE = "the range of ranks this entry takes in the board's bootstrap (95 %)"


def public_notes(statistics: dict[str, Any], primary: Metric) -> list[str]:
    """What the board says of the public board's rules it was ranked under
    (``leaderboard.public_board``): a freeze, the Ladder."""
    parts = []
    frozen = statistics.get("frozen")
    if frozen:
        since, until = (datetime.fromisoformat(frozen[k]) for k in ("since", "until"))
        parts.append(
            f"Frozen since {since:%Y-%m-%d %H:%M} UTC until {until:%Y-%m-%d %H:%M} UTC: the "
            "board ranks submissions made before the freeze; later ones appear when the phase "
            "ends."
        )
    ladder = statistics.get("ladder")
    if ladder:
        parts.append(
            f"Scores published by the Ladder: a team's {primary.label} is published only when "
            f"it beats the team's best published score by more than {ladder['threshold']:g}, "
            "rounded to it; raw scores, intervals and slices stay hidden."
        )
    return parts


def statistics_note(statistics: dict[str, Any], primary: Metric) -> str:
    """What the board says of its rank intervals, groups, minimum detectable effect and
    calibrated scores, or why it has no intervals: plain text (the template escapes it)."""
    parts = public_notes(statistics, primary)
    if "unavailable" in statistics:
        parts.append(f"No rank intervals: {statistics['unavailable']}.")
    elif "confidence" in statistics:
        confidence = f"{statistics['confidence'] * 100:g} %"
        parts.append(
            f"Rank in brackets: the range of ranks an entry takes in the central {confidence} "
            f"of {statistics['n_boot']:,} paired bootstrap resamples of the split's "
            f"{statistics['units']:,} units (what the paired comparison pairs). Shaded bands: "
            "entries that cannot be told apart from the one above them (paired tests, "
            f"{SHOWN_CORRECTION[statistics['correction']]}, α = {statistics['alpha']:g})."
        )
        if statistics.get("calibrated"):
            parts.append(
                "Ranked by the scores calibrated by people's labels: each resample redraws the "
                "audit's labels too, so the ranges and bands hold the labels' uncertainty."
            )
    effect = statistics.get("minimum_detectable_effect")
    if effect is not None:
        parts.append(
            f"This split tells apart differences of {primary.shown(effect)} or more in "
            f"{primary.label} ({statistics['power'] * 100:g} % power, two entries of typical "
            "agreement)."
        )
    calibration = statistics.get("calibration")
    if calibration:
        parts.append(
            f"Calibrated by people: {primary.label} corrected by the {calibration['labels']} "
            f"people's labels of judge audit #{calibration['audit']} (prediction-powered "
            "inference, 95 % interval); "
            + ("it ranks the board." if calibration["ranks"] else "the judge's score ranks.")
        )
    if "repeats" in statistics:
        parts.append(repeats.note(statistics["repeats"]))
    return " ".join(parts)


def rows(
    entries: list[Entry], columns: list[Metric], entry_href: str = "", calibrated: bool = False
) -> list[Row]:
    """The entries' lines; ``entry_href``: the URL of the first entry's page with ``{}`` for
    the run id (``entry_href.format(run_id)``); ``calibrated``: with the column of the scores
    calibrated by people's labels."""
    primary = columns[0]
    result = []
    for entry in entries:
        metrics = entry.metrics
        interval = (
            f"[{primary.shown(entry.primary_ci_low)}, {primary.shown(entry.primary_ci_high)}]"
            if entry.primary_ci_low is not None and entry.primary_ci_high is not None
            else "–"
        )
        cells = [c.shown(number(metrics.get(c.name))) for c in columns]
        submitted = f"{entry.submitted_at:%Y-%m-%d}"
        href = entry_href.format(entry.run_id) if entry_href else ""
        result.append(
            Row(
                entry,
                cells,
                interval,
                submitted,
                href,
                _calibrated(entry, primary) if calibrated else None,
                repeats.shown(entry.repeated, primary),
            )
        )
    return result
