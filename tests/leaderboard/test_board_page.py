"""A page read alone (``board_page``: the stored board's order, then the page's entries) is the
full board's page (``board_store.board`` then ``board_table.sorted_entries``), whatever the
rules, and the stored board is the board ranked now."""

import random

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from leaderboard import board_store, ranking
from leaderboard.charts import cell_interval, cell_value
from leaderboard.models import SliceScore, Split, Submission, Task, Team
from leaderboard.views import board_page, board_table
from leaderboard.views.board_table import RANK, SUBMITTED, Sort

SORTS = [
    Sort(RANK, False),
    Sort("truthfulness", True),
    Sort("accuracy", False),
    Sort("hallucination_rate", True),
    Sort(SUBMITTED, True),
    Sort(SUBMITTED, False),
]


@pytest.fixture
def public(splits):
    return splits["public-test"]


def random_board(public, make_entry, seed: str) -> Split:
    """45 entries of 12 teams: repeated and missing values, baselines, chosen runs, equal
    submission times."""
    rng = random.Random(seed)
    teams = [Team.objects.create(name=f"team-{i}") for i in range(12)]
    runs = []
    for _ in range(45):
        value = rng.choice([0.1, 0.2, 0.2, 0.3, None, round(rng.random(), 2)])
        runs.append(
            make_entry(
                rng.choice(teams),
                public,
                value,
                age_days=rng.choice([1, 2, 3]),
                baseline=rng.random() < 0.1,
                chosen=rng.random() < 0.3,
            )
        )
    same_time = rng.sample([run.submission_id for run in runs], 15)
    for submission in Submission.objects.filter(pk__in=same_time):
        submission.created_at = runs[0].submission.created_at
        submission.save(update_fields=["created_at"])  # as an organiser edits it
    return Split.objects.select_related("task").get(pk=public.pk)


@pytest.mark.parametrize("rule", Task.EntryRule.values)
@pytest.mark.parametrize("tie", Task.TieRule.values)
def test_a_page_read_alone_is_the_full_boards_page(public, make_entry, rule, tie):
    task = public.task
    task.entry_rule, task.tie_rule = rule, tie
    task.save()
    split = random_board(public, make_entry, f"{rule}-{tie}")
    assert board_store.stored(split, "") == board_store.ranked(split, "")
    full = board_store.board(split)
    assert any(e.rank is None for e in full.entries)  # baselines
    assert len({e.rank for e in full.entries}) < len(full.entries)  # ties (shared) or baselines
    for sort in SORTS:
        alone = board_page.board(split, "", sort)
        expected = board_table.sorted_entries(full.entries, sort)
        assert len(alone.entries) == len(expected)
        assert alone.entries[0 : len(expected)] == expected, sort
        assert alone.entries[5:12] == expected[5:12], sort  # a page
        assert (alone.dimensions, alone.judges) == (full.dimensions, full.judges)
        assert (alone.derived, alone.undefined) == (full.derived, full.undefined)


def test_a_page_reads_only_its_entries(teams, public, make_entry):
    for i in range(8):
        make_entry(teams["alpha"] if i % 2 else teams["beta"], public, i / 10, baseline=i > 1)
    split = Split.objects.select_related("task").get(pk=public.pk)
    listing = board_page.board(split, "", Sort(RANK, False)).entries
    with CaptureQueriesContext(connection) as captured:
        page = listing[2:5]
    assert len(captured) == 1  # the three entries' rows
    assert page == board_store.board(split).entries[2:5]
    with pytest.raises(TypeError):
        listing[0]


ODD_CELLS = [
    {"truthfulness": 0.25, "truthfulness_ci95": [0.1, 0.4]},
    {"truthfulness": 3, "truthfulness_ci95": [0, 1]},
    {"truthfulness": True, "truthfulness_ci95": [0.1, "x"]},
    {"truthfulness": "n/a", "truthfulness_ci95": 5},
    {"truthfulness": None, "truthfulness_ci95": [1, 2, 3]},
    {"truthfulness": [1], "truthfulness_ci95": {"low": 1}},
    {"truthfulness_ci95": [False, -0.5]},
    {},
]


def test_a_slice_page_reads_its_metric_as_the_chart_reads_the_stored_cell(
    teams, public, make_entry
):
    run = make_entry(teams["alpha"], public, 0.3)
    for i, metrics in enumerate(ODD_CELLS):
        SliceScore.objects.create(run=run, dimension="odd", value=f"v{i}", count=i, metrics=metrics)
    entries = board_store.entries(public)
    full = ranking.slice_table(entries, "odd")
    shown = ranking.slice_table(entries, "odd", "truthfulness")
    assert shown.values == full.values == [f"v{i}" for i in range(len(ODD_CELLS))]
    metric = next(c for c in ranking.columns(public.task) if c.name == "truthfulness")
    (_, stored), (_, read) = full.rows[0], shown.rows[0]
    for value in full.values:
        assert cell_value(read[value], metric) == cell_value(stored[value], metric), value
        assert cell_interval(read[value], metric) == cell_interval(stored[value], metric), value
        assert read[value]["count"] == stored[value]["count"]
