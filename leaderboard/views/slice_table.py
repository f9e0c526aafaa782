"""A slice dimension's table as HTML: a row per entry, a cell per slice value with its score,
interval and item count, and beside them the entry's place among the value's entries (its rank
there, the range of ranks in the value's bootstrap, its group) and its score calibrated by
people's labels there (``leaderboard.slice_statistics``); each value's header says its minimum
detectable effect. Built here, not by template lookups: a page has a cell per entry and slice
value (~1,300)."""

from __future__ import annotations

from html import escape
from typing import NamedTuple

from django.utils.safestring import SafeString, mark_safe

from evaluator.seam import Metric
from leaderboard.board_statistics import SHOWN_CORRECTION
from leaderboard.charts import cell_interval, cell_value
from leaderboard.entries import Place
from leaderboard.ranking import SliceCell, SliceTable
from leaderboard.slice_statistics import SliceStatistics
from leaderboard.views.board_table import rank_td

GROUP_TITLE = "entries of one group cannot be told apart in this slice value"
SLICE_RANK_TITLE = (
    "its rank in this slice value, and the range of ranks it takes in the value's bootstrap (95 %)"
)


class CellText(NamedTuple):
    """A slice cell as shown: ``value`` for ``data-value`` ("" when none), the metric's text,
    its interval's, the items behind it (None: no cell), and what is shown beside it (its
    place there: ``beside``). A tuple: ~1,300 a slice page."""

    value: str
    shown: str
    interval: str
    count: int | None  # type: ignore[assignment]  # the items behind it; shadows tuple.count
    beside: str = ""

    def td(self) -> str:
        """The cell as HTML. Its texts are numbers formatted by ``cell_text`` and ``beside``
        (``repr``, ``Metric.shown``, integers, a dash): nothing in them to escape."""
        count = f' <span class="muted">n={self.count}</span>' if self.count is not None else ""
        title = f' title="95 % interval {self.interval}"' if self.interval != "–" else ""
        shown = f"{self.shown}{count}{self.beside}"
        return f'<td class="num" data-value="{self.value}"{title}>{shown}</td>'


def cell_text(cell: SliceCell | None, metric: Metric, place: Place | None = None) -> CellText:
    if cell is None:
        return CellText("", metric.shown(None), "–", None)
    number = cell_value(cell, metric)
    ends = cell_interval(cell, metric)
    interval = f"[{metric.shown(ends[0])}, {metric.shown(ends[1])}]" if ends else "–"
    shown_number = "" if number is None else repr(number)
    return CellText(
        shown_number, metric.shown(number), interval, cell["count"], beside(place, metric)
    )


def beside(place: Place | None, metric: Metric) -> str:
    """An entry's place in a slice value as HTML: rank (interval), group, calibrated score."""
    if place is None:
        return ""
    parts = []
    if place.rank is not None and place.rank_low is not None and place.rank_high is not None:
        ranks = (
            str(place.rank_low)
            if place.rank_low == place.rank_high
            else f"{place.rank_low}–{place.rank_high}"
        )
        parts.append(
            f'<span class="rank-interval" title="{SLICE_RANK_TITLE}">#{place.rank} ({ranks})</span>'
            f' <span class="slice-group group-{place.group % 2 if place.group else 0}" '
            f'title="{GROUP_TITLE}">g{place.group}</span>'
        )
    if place.calibrated is not None:
        low, high = metric.shown(place.calibrated_low), metric.shown(place.calibrated_high)
        parts.append(
            f'<span class="calibrated" title="calibrated by people\'s labels (95 % interval)">'
            f"people {metric.shown(place.calibrated)} [{low}, {high}]</span>"
        )
    return f'<br><span class="muted slice-place">{"<br>".join(parts)}</span>' if parts else ""


def slice_lines(
    table: SliceTable,
    metric: Metric,
    entry_href: str,
    statistics: SliceStatistics | None = None,
) -> list[SafeString]:
    """The slice table's rows as HTML, escaped: per entry, a link to its page (``rows``'
    ``entry_href``) and a cell per slice value (``CellText.td``), with the entry's place there
    (``statistics``: only for the metric they are computed on)."""
    lines = []
    for entry, cells in table.rows:
        href = escape(entry_href.format(entry.run_id))
        tds = "".join(
            cell_text(
                cells.get(value),
                metric,
                statistics.place(value, entry.run_id) if statistics else None,
            ).td()
            for value in table.values
        )
        lines.append(
            mark_safe(
                f'<tr data-team="{entry.team_id}">{rank_td(entry)}<td class="team">'
                f'<a class="entry" href="{href}">{escape(entry.method_name)}</a> '
                f'<span class="muted">({escape(entry.team)})</span></td>{tds}</tr>\n'
            )
        )
    return lines


def value_headers(
    table: SliceTable, metric: Metric, statistics: SliceStatistics | None
) -> list[SafeString]:
    """Each value's header cell: its name and, where computed, its minimum detectable effect."""
    headers = []
    for value in table.values:
        found = statistics.values.get(value) if statistics else None
        effect = found.statistics.get("minimum_detectable_effect") if found else None
        shown = (
            f'<br><span class="muted" title="the smallest difference this slice value tells '
            f'apart (80 % power)">MDE {metric.shown(effect)}</span>'
            if effect is not None
            else ""
        )
        headers.append(mark_safe(f'<th class="num">{escape(value)}{shown}</th>'))
    return headers


def statistics_notes(statistics: SliceStatistics | None, metric: Metric) -> list[str]:
    """What the page says of the slices' rank intervals, groups and calibrated scores, and why
    a value has none: plain text (the template escapes it)."""
    if statistics is None:
        return []
    notes = []
    if statistics.unavailable:
        notes.append(f"No rank intervals by {statistics.dimension}: {statistics.unavailable}.")
    else:
        correction = next(
            (
                SHOWN_CORRECTION[found.statistics["correction"]]
                for found in statistics.values.values()
                if "correction" in found.statistics
            ),
            SHOWN_CORRECTION["holm"],
        )
        notes.append(
            f"Beside each cell: the entry's rank among the entries' {metric.label} in that "
            "value, the range of ranks it takes in a paired bootstrap of that value's units (95 %)"
            ", and its group (g): entries that cannot be told apart from the one above them "
            f"there (paired tests, {correction}). MDE: the smallest difference the value "
            "tells apart (80 % power, two entries of typical agreement)."
        )
    for value, found in statistics.values.items():
        if "unavailable" in found.statistics:
            notes.append(f"{statistics.dimension} {value}: {found.statistics['unavailable']}.")
        calibration = found.statistics.get("calibration", {})
        if "unavailable" in calibration:
            notes.append(
                f"{statistics.dimension} {value}: no calibrated score: "
                f"{calibration['unavailable']}."
            )
        elif calibration:
            notes.append(
                f'{statistics.dimension} {value}: "people": {metric.label} corrected by the '
                f"{calibration['labels']} people's labels of judge audit #{calibration['audit']} "
                "in this value (prediction-powered inference, 95 % interval)."
            )
    return notes
