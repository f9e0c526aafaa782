"""The slice chart's geometry: the axis in the table's units, a negative side only when a value
goes below zero, intervals across the bars, zero bars still visible."""

from __future__ import annotations

from datetime import UTC, datetime

from evaluator.benchmarks import get_benchmark
from leaderboard.charts import LABEL_WIDTH, PLOT_WIDTH, slice_chart
from leaderboard.ranking import Entry, SliceTable

TRUTHFULNESS = next(m for m in get_benchmark("crag-mm").metrics if m.name == "truthfulness")


def entry(run_id: int) -> Entry:
    return Entry(
        run_id, run_id, run_id, run_id, f"team{run_id}", f"m{run_id}", False, "", "",
        datetime(2026, 1, 1, tzinfo=UTC), "rules@1", True, 0, 10, 0.1, None, None, "{}",
    )  # fmt: skip


def cell(value: float, ci: list[float] | None = None) -> dict:
    metrics = {"truthfulness": value}
    if ci is not None:
        metrics["truthfulness_ci95"] = ci
    return {"count": 10, "metrics": metrics}


def test_no_negative_side_when_nothing_is_negative_and_intervals_are_drawn():
    table = SliceTable(
        "domain",
        ["food", "vehicle"],
        [(entry(1), {"food": cell(0.5, [0.3, 0.7]), "vehicle": cell(0.0)})],
    )
    chart = slice_chart(table, TRUTHFULNESS)
    assert [t.label for t in chart.ticks] == [
        "0.0",
        "25.0",
        "50.0",
        "75.0",
        "100.0",
    ]  # as the table
    assert chart.zero_x == LABEL_WIDTH
    food, vehicle = chart.groups
    (bar,) = food.bars
    assert bar.width == PLOT_WIDTH / 2 and bar.ci == (LABEL_WIDTH + 0.3 * PLOT_WIDTH,
                                                      LABEL_WIDTH + 0.7 * PLOT_WIDTH)  # fmt: skip
    assert "[30.0, 70.0]" in bar.title
    (zero,) = vehicle.bars
    assert zero.width >= 2 and zero.ci is None  # a zero bar is still drawn


def test_the_negative_side_appears_when_a_value_or_interval_is_negative():
    table = SliceTable("domain", ["food"], [(entry(1), {"food": cell(0.1, [-0.2, 0.4])})])
    chart = slice_chart(table, TRUTHFULNESS)
    assert chart.ticks[0].label == "-100.0" and chart.ticks[2].label == "0.0"
    assert chart.zero_x == LABEL_WIDTH + PLOT_WIDTH / 2


def test_the_svg_escapes_team_written_names_and_slice_values():
    table = SliceTable("domain", ['<b>"food"</b>'], [(entry(1), {'<b>"food"</b>': cell(0.5)})])
    named = entry(1)._replace(method_name="<script>x</script>")
    table = SliceTable(table.dimension, table.values, [(named, table.rows[0][1])])
    svg = slice_chart(table, TRUTHFULNESS).groups_svg()
    assert "<script>" not in svg and "&lt;script&gt;x&lt;/script&gt;: 50.0" in svg
    assert "&lt;b&gt;&quot;food&quot;&lt;/b&gt;" in svg and "<b>" not in svg
