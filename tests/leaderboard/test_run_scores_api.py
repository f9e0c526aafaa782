"""Run records in the API carry each done run's score (the primary metric and its 95 %
interval) where the caller may see it: a private test's only after the split's reveal, as the
pages show it (``permissions.can_see_score``)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from leaderboard import api_tokens
from leaderboard.models import Challenge, EvaluationRun, Split


def _api(user) -> APIClient:
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {api_tokens.create(user, 'tests')[1]}")
    return api


@pytest.fixture
def runs(teams, splits, make_entry):
    return {
        "public": make_entry(teams["alpha"], splits["public-test"], 0.4),
        "private": make_entry(teams["alpha"], splits["private-test"], 0.2),
        "running": make_entry(
            teams["alpha"], splits["validation"], 0.3, state=EvaluationRun.State.RUNNING
        ),
    }


def _by_id(api) -> dict[int, dict]:
    return {run["id"]: run for run in api.get(reverse("api:run-list")).json()["results"]}


def test_a_done_runs_score_comes_with_its_interval(runs, make_user, teams):
    shown = _by_id(_api(make_user(team=teams["alpha"])))
    public = shown[runs["public"].pk]
    assert public["score"] == {
        "metric": "truthfulness",
        "label": "Truthfulness",
        "scale": "signed_fraction",
        "value": pytest.approx(0.4),
        "ci95": [pytest.approx(0.3), pytest.approx(0.5)],
    }
    assert public["score_hidden"] is False
    running = shown[runs["running"].pk]
    assert (running["score"], running["score_hidden"]) == (None, False)  # not done yet


def test_a_private_score_is_hidden_from_the_team_until_the_reveal(runs, make_user, teams):
    api = _api(make_user(team=teams["alpha"]))
    private = _by_id(api)[runs["private"].pk]
    assert (private["score"], private["score_hidden"]) == (None, True)
    detail = api.get(reverse("api:submission-detail", args=[runs["private"].submission_id]))
    (run,) = detail.json()["runs"]
    assert (run["score"], run["score_hidden"]) == (None, True)
    Split.objects.filter(kind="private-test").update(reveal_at=timezone.now() - timedelta(1))
    revealed = _by_id(api)[runs["private"].pk]
    assert revealed["score"]["value"] == pytest.approx(0.2) and not revealed["score_hidden"]


def test_a_hidden_split_stays_hidden_after_its_reveal_time(runs, make_user, teams):
    Split.objects.filter(kind="private-test").update(
        reveal_at=timezone.now() - timedelta(1), visibility=Split.Visibility.HIDDEN
    )
    private = _by_id(_api(make_user(team=teams["alpha"])))[runs["private"].pk]
    assert (private["score"], private["score_hidden"]) == (None, True)


def test_organisers_see_every_score_other_teams_no_run(runs, make_user, teams):
    organiser = make_user()
    Challenge.objects.get().organisers.add(organiser)
    private = _by_id(_api(organiser))[runs["private"].pk]
    assert private["score"]["value"] == pytest.approx(0.2)
    other = _api(make_user(team=teams["beta"]))
    assert other.get(reverse("api:run-detail", args=[runs["public"].pk])).status_code == 404
    assert _by_id(other) == {}
