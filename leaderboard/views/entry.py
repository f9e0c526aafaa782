"""One leaderboard entry's page: its headline scores, its benchmark's profile (``Profile``:
MRAG-Suite's claim metrics over all, image and text items as a chart and a table, and the
GPD - GO gap beside) and, per slice dimension, a chart of its score on each slice value with
the 95 % interval where stored, and the table behind it.

Only an entry of the board (``?setting=``'s) is shown: a team's other runs are not entries, and
the board's visibility (``results_split``) is checked first, so a private board before its
reveal stays hidden from everyone but its organisers.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from evaluator.seam import Metric, SomeBenchmark
from leaderboard import board_cache, ranking, repeats
from leaderboard.charts import NUMBER, Chart, Point, bar_chart, slice_chart
from leaderboard.views import board_nav, board_settings, board_table, slice_table
from leaderboard.views.boards import results_split


def _slice(
    table: ranking.SliceTable, metric: Metric
) -> tuple[str, Chart | None, list[tuple[str, slice_table.CellText]]]:
    """A dimension of the entry: its chart (one bar per slice value) and its lines."""
    ((_, cells),) = table.rows
    lines = [(value, slice_table.cell_text(cells[value], metric)) for value in table.values]
    return table.dimension, slice_chart(table, metric) if table.values else None, lines


@dataclass(frozen=True)
class ProfileShown:
    title: str
    series: tuple[str, ...]
    chart: Chart | None  # None: no number to draw (every figure withheld)
    lines: list[tuple[str, list[str]]]  # per row: its label, each series' value as shown
    figures: list[tuple[str, str]]  # the scores across settings: label, value or why none


def _profile(
    benchmark: SomeBenchmark, entry: ranking.Entry, board: ranking.Board
) -> ProfileShown | None:
    """The entry's profile (``Benchmark.profile`` of the task's benchmark with its settings:
    MRAG-Suite's title names a counting other than RAGChecker's) from its headline metrics;
    None when the benchmark has none."""
    profile = benchmark.profile()
    if profile is None:
        return None
    metrics = entry.metrics
    axis = benchmark.metric(next(n for _, names in profile.rows for n in names if n))

    def number(name: str | None) -> float | None:
        value = metrics.get(name) if name else None
        return float(value) if isinstance(value, NUMBER) else None

    groups: list[tuple[str, list[Point | None]]] = []
    lines = []
    for label, names in profile.rows:
        values = [number(name) for name in names]
        groups.append((label, [None if v is None else Point(v) for v in values]))
        lines.append(
            (label, [axis.shown(v) if n else "" for n, v in zip(names, values, strict=True)])
        )
    drawn = any(p is not None for _, points in groups for p in points)
    derived = board.derived.get(entry.submission_id, {})
    why = board.undefined.get(entry.submission_id, {})
    figures = []
    for name in profile.derived:
        metric, value = benchmark.metric(name), derived.get(name)
        text = metric.shown(value) if value is not None else why.get(name, "not computed")
        figures.append((metric.label, text))
    chart = bar_chart(axis, list(profile.series), groups) if drawn else None
    return ProfileShown(profile.title, profile.series, chart, lines, figures)


def entry_page(
    request: HttpRequest, slug: str, task_id: str, kind: str, run_id: int
) -> HttpResponse:
    split = results_split(request, slug, task_id, kind)
    setting = board_settings.asked_setting(request, split)
    columns = ranking.columns(split.task, setting, split)
    metric = next((c for c in columns if c.name == request.GET.get("metric")), columns[0])
    if request.GET.get("metric", metric.name) != metric.name:
        names = ", ".join(c.name for c in columns)
        raise Http404(f"unknown metric {request.GET['metric']!r}: this board has {names}")
    board = board_cache.board(split, setting)
    entry = next((e for e in board.entries if e.run_id == run_id), None)
    if entry is None:
        raise Http404(f"run #{run_id} is not an entry of this leaderboard")
    tables = ranking.entry_slices(entry)
    primary = columns[0]  # the board's primary metric
    found = repeats.runs_of(split, setting, entry.run_id) if entry.repeated else []
    repeated = [
        (run, f"{n} of {len(found)}", state, "" if score is None else primary.shown(score))
        for n, (run, state, score) in enumerate(found, start=1)
    ]
    shown = board_settings.settings_shown(request, split, setting, lambda name: ("metric",))
    context = {
        "split": split,
        "task": split.task,
        "entry": entry,
        "row": board_table.rows([entry], columns)[0],
        "columns": columns,
        "metric": metric,
        "count_label": split.task.declared().unit.capitalize(),
        "slices": [_slice(table, metric) for table in tables],
        "profile": _profile(split.task.scoring(), entry, board),  # with its settings
        "repeated": repeated,
        "repeated_line": repeats.shown(entry.repeated, primary),
        **shown,
        **board_nav.around(request, split, "leaderboard", setting),
    }
    return render(request, "leaderboard/entry.html", context)
