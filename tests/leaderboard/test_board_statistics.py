"""Rank intervals, groups and the minimum detectable effect as a board stores and shows them
(``leaderboard.board_statistics``): worked out by hand on a small board, with baselines, ties
and boards that cannot have them; and a private split's per-unit values never reach a team."""

from __future__ import annotations

import math
from datetime import timedelta

import numpy as np
import pytest
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from leaderboard import board_store
from leaderboard.models import EvaluationRun, RankedBoard, RunUnits, Split, Task, Team
from leaderboard.scores import store_scores

from .factories import scores_dict

# Two units. X = [1, 0] and Y = [0, 0.6] swap places in a quarter of the resamples (the one
# drawing the second unit twice); Z = [-1, -1] is always last. X - Y: differences [1, -0.6],
# z = 0.25, p = 0.80: one group; Y - Z: [1, 1.6], z = 4.33, Holm p = 3e-5: apart.
X, Y, Z = [1.0, 0.0], [0.0, 0.6], [-1.0, -1.0]
SPREAD_XY, SPREAD_YZ = math.sqrt(1.28), math.sqrt(0.18)
MDE = (1.959964 + 0.841621) * (SPREAD_XY + SPREAD_YZ) / 2 / math.sqrt(2)


@pytest.fixture
def api() -> APIClient:
    return APIClient()


@pytest.fixture
def public(splits) -> Split:
    return splits["public-test"]


@pytest.fixture
def board(teams, public, make_entry) -> Split:
    organisers = Team.objects.create(name="organisers")
    make_entry(teams["alpha"], public, 0.5, method="x", units=X)
    make_entry(teams["beta"], public, 0.3, method="y", units=Y)
    make_entry(teams["gamma"], public, -1.0, method="z", units=Z)
    make_entry(organisers, public, 0.4, method="base", baseline=True, units=[0.4, 0.4])
    return public


def places(split: Split) -> list[tuple[str, int | None, int | None, int | None, int | None]]:
    return [
        (e.method_name, e.rank, e.rank_low, e.rank_high, e.group)
        for e in board_store.entries(split)
    ]


def test_a_small_board_by_hand(board):
    assert places(board) == [
        ("x", 1, 1, 2, 1),
        ("base", None, None, None, None),  # a baseline: no rank, no interval, no group
        ("y", 2, 1, 2, 1),
        ("z", 3, 3, 3, 2),
    ]
    statistics = board_store.board(board).statistics
    assert statistics["units"] == 2 and statistics["correction"] == "holm"
    assert statistics["minimum_detectable_effect"] == pytest.approx(MDE, rel=1e-5)


def test_ties_share_the_interval_by_the_tie_rule(teams, public, make_entry):
    make_entry(teams["alpha"], public, 0.5, method="a", units=[1.0, 0.0], age_days=2)
    make_entry(teams["beta"], public, 0.5, method="b", units=[1.0, 0.0], age_days=1)
    assert [p[1:] for p in places(public)] == [(1, 1, 1, 1), (1, 1, 1, 1)]
    public.task.tie_rule = Task.TieRule.EARLIER
    public.task.save()
    assert [p[1:] for p in places(public)] == [(1, 1, 1, 1), (2, 2, 2, 1)]


def test_the_stored_board_keeps_them_and_a_change_computes_them_again(board, teams):
    row = RankedBoard.objects.get(split=board, setting="")
    assert (row.rank_low, row.rank_high, row.groups) == (
        [1, None, 1, 3], [2, None, 2, 3], [1, None, 1, 2],
    )  # fmt: skip
    run = EvaluationRun.objects.get(pk=board_store.entries(board)[3].run_id)
    store_scores(run, scores_dict(1.0), units=np.array([1.0, 1.0]))  # z: best on both units
    assert places(board)[0] == ("z", 1, 1, 1, 1)


def test_entries_scored_without_units_leave_the_board_without_intervals(board, make_entry):
    make_entry(Team.objects.create(name="delta"), board, 0.0, method="old")
    assert {p[2:] for p in places(board)} == {(None, None, None)}
    reason = board_store.board(board).statistics["unavailable"]
    assert reason == "1 entries were scored before Podium kept their units"


def test_incomplete_results_get_no_interval(board, make_entry):
    make_entry(Team.objects.create(name="delta"), board, None, method="unjudged")
    assert places(board)[-1] == ("unjudged", 4, None, None, None)
    assert places(board)[0] == ("x", 1, 1, 2, 1)


def test_another_primary_metric_leaves_the_board_without_intervals(board):
    board.task.primary_metric = "accuracy"
    board.task.save()
    statistics = board_store.board(board).statistics
    assert "computed on truthfulness" in statistics["unavailable"]
    assert all(p[2] is None for p in places(board))


def test_units_must_be_finite(teams, public, make_entry):
    run = make_entry(teams["alpha"], public, 0.5, units=X)
    with pytest.raises(ValueError, match="finite numbers"):
        store_scores(run, scores_dict(0.5), units=np.array([1.0, float("nan")]))
    assert RunUnits.objects.get(run=run).array().tolist() == X  # left as it was


def test_page_api_and_exports_show_them(board, client, api):
    args = (board.task.challenge.slug, board.task.task_id, board.kind)
    page = client.get(reverse("leaderboard:leaderboard", args=args)).content.decode()
    assert "1 <span" in page and "(1–2)</span>" in page and "(3)</span>" in page
    assert 'data-group="2" class="group-0"' in page
    assert "Holm&#x27;s correction" in page and "This split tells apart differences of" in page
    body = api.get(reverse("api:split-leaderboard", args=[board.pk])).json()
    assert [e["rank_ci95"] for e in body["entries"]] == [[1, 2], [None, None], [1, 2], [3, 3]]
    assert [e["group"] for e in body["entries"]] == [1, None, 1, 2]
    assert body["statistics"]["minimum_detectable_effect"] == pytest.approx(MDE, rel=1e-5)
    exported = client.get(reverse("leaderboard:export-json", args=args)).json()
    assert exported["entries"][3]["rank_ci95"] == [3, 3]
    assert exported["statistics"]["correction"] == "holm"
    csv = client.get(reverse("leaderboard:export-csv", args=args)).content.decode()
    assert csv.splitlines()[0].startswith("rank,rank_low,rank_high,group,team")
    assert csv.splitlines()[1].startswith("1,1,2,1,alpha")


@pytest.mark.parametrize(
    ("adjusted", "groups", "shown"),
    [
        ("holm", [1, 1, 1], "Holm&#x27;s correction"),
        ("bonferroni", [1, 1, 1], "Bonferroni&#x27;s correction"),
        ("none", [1, 2, 3], "no correction for multiple comparisons"),
    ],
)
def test_the_task_chooses_the_multiple_comparison_correction(
    teams, public, make_entry, client, adjusted, groups, shown
):
    # two units; each entry's differences from the one above: [1, 0.37], z = 1.37 / 0.63,
    # p = 0.0297 twice: apart alone, not once corrected (Holm and Bonferroni: 0.059)
    for team, units in (("alpha", [2.0, 2.0]), ("beta", [1.0, 1.63]), ("gamma", [0.0, 1.26])):
        make_entry(teams[team], public, float(np.mean(units)), method=team, units=units)
    public.task.multiple_comparisons = adjusted
    public.task.save()
    board_store.results_changed(public.pk)
    assert [group for *_, group in places(public)] == groups
    assert board_store.board(public).statistics["correction"] == adjusted
    args = (public.task.challenge.slug, public.task.task_id, public.kind)
    assert shown in client.get(reverse("leaderboard:leaderboard", args=args)).content.decode()


def test_a_private_splits_units_never_reach_a_team(teams, splits, make_entry, api, make_user):
    private = splits["private-test"]
    make_entry(teams["alpha"], private, 0.5, method="p", units=[0.123456, 0.876544])
    make_entry(teams["beta"], private, 0.25, method="q", units=[0.25, 0.25])
    api.force_authenticate(make_user("member", team=teams["alpha"]))
    path = reverse("api:split-leaderboard", args=[private.pk])
    assert api.get(path).status_code == 403
    private.reveal_at = timezone.now() - timedelta(minutes=1)
    private.save()
    body = api.get(path).content.decode()
    assert '"rank_ci95"' in body  # the board is shown, its aggregate statistics with it
    assert "0.123456" not in body and "0.876544" not in body
    run = api.get(reverse("api:run-detail", args=[private.runs.first().pk])).content.decode()
    assert "0.123456" not in run
