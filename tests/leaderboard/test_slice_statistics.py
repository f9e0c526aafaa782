"""Rank intervals, groups, the minimum detectable effect and calibrated scores per slice value
(``leaderboard.slice_statistics``, ``leaderboard.slice_calibration``): worked out by hand on a
small board cut in two values, dimensions whose units do not nest, the page, API and exports,
and who may see them."""

from __future__ import annotations

import math
from datetime import timedelta

import numpy as np
import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from leaderboard import board_cache, slice_store
from leaderboard.models import AuditItem, EvaluationRun, Split, Team
from leaderboard.scores import ScoresError, store_scores
from leaderboard.slice_statistics import slice_statistics

from .factories import scores_dict
from .test_board_statistics import MDE
from .test_calibration import SE, audit_of

# Four units: the first two are food, the last two vehicle. In food the entries are
# test_board_statistics' X, Y, Z (its worked-out intervals, groups and MDE); in vehicle every
# entry is constant: y > z > x on every resample, no spread, three groups, MDE 0.
X, Y, Z = [1.0, 0.0, -1.0, -1.0], [0.0, 0.6, 1.0, 1.0], [-1.0, -1.0, 0.0, 0.0]
UNIT_SLICES: dict[str, list[str | None]] = {
    "domain": ["food", "food", "vehicle", "vehicle"],
    "turn_idx": ["0", None, "1", "1"],  # the second unit has turns of two values
}
FOOD_VERDICTS = {"domain": {"food": {"correct": 6, "missing": 2, "hallucinated": 2}}}


@pytest.fixture
def board(teams, splits, make_entry) -> Split:
    return _board(splits["public-test"], teams, make_entry)


def _board(split: Split, teams, make_entry) -> Split:
    for team, score, method, units in (
        ("alpha", 0.5, "x", X), ("beta", 0.3, "y", Y), ("gamma", -1.0, "z", Z),
    ):  # fmt: skip
        make_entry(teams[team], split, score, method=method, units=units,
                   unit_slices=UNIT_SLICES, slice_verdicts=FOOD_VERDICTS)  # fmt: skip
    organisers = Team.objects.get_or_create(name="organisers")[0]
    make_entry(organisers, split, 0.4, method="base", baseline=True, units=[0.4] * 4,
               unit_slices=UNIT_SLICES)  # fmt: skip
    return split


def places(split: Split, dimension: str, value: str) -> dict[str, tuple]:
    found = slice_statistics(split, "", dimension)
    methods = {e.run_id: e.method_name for e in board_cache.board(split).entries}
    return {
        methods[run]: (p.rank, p.rank_low, p.rank_high, p.group)
        for run, p in found.values[value].places.items()
    }


def test_a_slice_value_by_hand(board):
    assert places(board, "domain", "food") == {
        "x": (1, 1, 2, 1), "y": (2, 1, 2, 1), "z": (3, 3, 3, 2),
    }  # fmt: skip  # the baseline takes no part
    assert places(board, "domain", "vehicle") == {
        "y": (1, 1, 1, 1), "z": (2, 2, 2, 2), "x": (3, 3, 3, 3),
    }  # fmt: skip
    found = slice_statistics(board, "", "domain")
    food = found.values["food"].statistics
    assert food["units"] == 2 and food["correction"] == "holm" and food["metric"] == "truthfulness"
    assert food["minimum_detectable_effect"] == pytest.approx(MDE, rel=1e-5)
    assert found.values["vehicle"].statistics["minimum_detectable_effect"] == 0.0
    assert found.unavailable == ""


def test_units_that_do_not_nest_in_a_dimension_say_so(board):
    found = slice_statistics(board, "", "turn_idx")
    assert found.unavailable == (
        "1 of the split's 4 units hold several values of turn_idx (a conversation's turns): "
        "a slice value's score is not a mean over whole units"
    )
    assert found.values == {}


def test_entries_scored_without_unit_slices_say_so(board, make_entry):
    make_entry(Team.objects.create(name="delta"), board, 0.0, method="old", units=[0.0] * 4)
    assert "kept without their slice values" in slice_statistics(board, "", "domain").unavailable


def test_a_board_without_intervals_gives_its_reason(board, make_entry):
    make_entry(Team.objects.create(name="delta"), board, 0.0, method="unitless")
    found = slice_statistics(board, "", "domain")
    assert found.unavailable == "1 entries were scored before Podium kept their units"


def test_a_change_of_results_computes_them_again(board):
    before = slice_store.read(board, "", "domain")
    assert before == slice_store.read(board, "", "domain")
    z = next(e for e in board_cache.board(board).entries if e.method_name == "z")
    store_scores(_run(z.run_id), scores_dict(1.0), units=np.array([1.0] * 4),
                 unit_slices=UNIT_SLICES)  # fmt: skip
    board.refresh_from_db()
    after = slice_store.read(board, "", "domain")
    assert after.values["food"].places[z.run_id].rank == 1


def _run(pk: int) -> EvaluationRun:
    return EvaluationRun.objects.get(pk=pk)


def test_unit_slices_must_be_one_value_per_unit(board):
    run = _run(board_cache.board(board).entries[0].run_id)
    with pytest.raises(ScoresError, match="not one value per unit"):
        store_scores(run, scores_dict(0.5), units=np.array(X), unit_slices={"domain": ["food"]})
    with pytest.raises(ScoresError, match="not one value per unit"):
        store_scores(run, scores_dict(0.5), unit_slices={"domain": ["food"] * 4})


def finished_audit(split: Split, labeller) -> None:
    """test_calibration's audit, every labelled item a food one."""
    audit = audit_of(split, labeller, finished=False)
    AuditItem.objects.filter(audit=audit).update(slices={"domain": "food", "turn_idx": "0"})
    audit.finished_at = timezone.now()
    audit.save()


def test_calibrated_per_slice_value_is_the_formula_on_its_labels(board, make_user):
    finished_audit(board, make_user(staff=True))
    found = slice_statistics(board, "", "domain")
    x = next(e.run_id for e in board_cache.board(board).entries if e.method_name == "x")
    food = found.values["food"]
    place = food.places[x]
    # the food cell of x: 0.5 +- 0.1 (the factories'), judged correct 6, missing 2,
    # hallucinated 2: test_calibration's worked example
    assert place.calibrated == pytest.approx(0.3)
    half = 1.959964 * math.sqrt(SE**2 + 0.36 * 1.0 / 4 + 0.04 * 0.5 / 2)
    assert (place.calibrated_low, place.calibrated_high) == pytest.approx(
        (0.3 - half, 0.3 + half), rel=1e-5
    )
    assert food.statistics["calibration"]["labels"] == 6
    assert place.rank == 1  # beside its place
    vehicle = found.values["vehicle"]
    assert all(p.calibrated is None for p in vehicle.places.values())
    assert "labelled no item of domain vehicle" in vehicle.statistics["calibration"]["unavailable"]
    # the dimension without rank intervals still has its calibrated scores
    turns = slice_statistics(board, "", "turn_idx")
    assert turns.unavailable and "calibration" in turns.values["0"].statistics


def test_no_calibration_per_slice_without_a_finished_audit(board, make_user):
    audit_of(board, make_user(staff=True), finished=False)
    found = slice_statistics(board, "", "domain")
    assert all("calibration" not in v.statistics for v in found.values.values())


def _args(split: Split) -> tuple[str, str, str]:
    return (split.task.challenge.slug, split.task.task_id, split.kind)


def test_page_api_and_exports_show_them(board, client, make_user):
    finished_audit(board, make_user(staff=True))
    url = reverse("leaderboard:slices", args=_args(board)) + "?dimension=domain"
    page = client.get(url).content.decode()
    assert "#1 (1–2)</span>" in page and "#3 (3)</span>" in page
    assert 'class="slice-group group-0" title="' in page and ">g2</span>" in page
    assert ">MDE " in page and "Holm&#x27;s correction" in page
    assert "people 30.0 [" in page  # truthfulness x100, with its interval
    assert "labelled no item of domain vehicle" in page
    turns = client.get(url.replace("domain", "turn_idx")).content.decode()
    assert "No rank intervals by turn_idx: 1 of the split" in turns
    accuracy = client.get(url + "&metric=accuracy").content.decode()
    assert "#1 (" not in accuracy  # computed on the primary metric: shown beside it only
    body = (
        APIClient()
        .get(reverse("api:split-slices", args=[board.pk]), {"dimension": "domain"})
        .json()
    )
    x = body["entries"][0]
    assert x["method_name"] == "x" and x["slices"]["food"]["rank_ci95"] == [1, 2]
    assert x["slices"]["vehicle"]["rank"] == 3 and x["slices"]["vehicle"]["group"] == 3
    assert x["slices"]["food"]["calibrated"]["value"] == pytest.approx(0.3)
    assert body["statistics"]["food"]["minimum_detectable_effect"] == pytest.approx(MDE, 1e-5)
    assert body["entries"][1]["slices"]["food"]["rank"] is None  # the baseline
    exported = client.get(
        reverse("leaderboard:slices-export-json", args=_args(board)), {"dimension": "domain"}
    ).json()
    assert exported["entries"] == body["entries"] and exported["dimension"] == "domain"
    csv = (
        client.get(
            reverse("leaderboard:slices-export-csv", args=_args(board)), {"dimension": "domain"}
        )
        .content.decode()
        .splitlines()
    )
    assert csv[0].startswith("rank,team,method_name,is_baseline,submission_id,run_id,value")
    assert "slice_rank,rank_low,rank_high,group,calibrated" in csv[0]
    food_x = next(line for line in csv[1:] if ",x," in line and ",food," in line)
    assert ",1,1,2,1,0.3" in food_x


def test_an_unknown_dimension_is_refused(board, client):
    api = APIClient().get(reverse("api:split-slices", args=[board.pk]), {"dimension": "nope"})
    assert api.status_code == 400 and "domain" in api.json()["dimension"][0]
    export = reverse("leaderboard:slices-export-json", args=_args(board))
    assert client.get(export, {"dimension": "nope"}).status_code == 404


def test_a_private_split_before_its_reveal(teams, splits, make_entry, make_user, client):
    private = _board(splits["private-test"], teams, make_entry)
    finished_audit(private, make_user(staff=True))
    page = reverse("leaderboard:slices", args=_args(private)) + "?dimension=domain"
    export = reverse("leaderboard:slices-export-json", args=_args(private)) + "?dimension=domain"
    api_path = reverse("api:split-slices", args=[private.pk]) + "?dimension=domain"
    team, organiser = Client(), Client()
    team.force_login(make_user("member", team=teams["alpha"]))
    organiser.force_login(make_user("organiser", staff=True))
    for path in (page, export, api_path):
        assert client.get(path).status_code == 403  # anonymous
        assert team.get(path).status_code == 403
        assert organiser.get(path).status_code == 200
    private.reveal_at = timezone.now() - timedelta(minutes=1)
    private.save()
    assert "people 30.0 [" in team.get(page).content.decode()  # the aggregates only
    for path in (export, api_path):
        food = team.get(path).json()["entries"][0]["slices"]["food"]
        assert food["calibrated"]["value"] == pytest.approx(0.3) and food["rank"] == 1
    for path in (page, export, api_path):
        text = team.get(path).content.decode()
        # the labels, their notes, the audited items and the per-unit values never
        for secret in ("the hidden question", "an answer", '"i3"', "0.6,", "hallucinated"):
            assert secret not in text, (path, secret)
