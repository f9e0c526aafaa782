"""What a team reads of the actions on its submissions, in the API (``standing``, ``actions``):
each action's kind, date and reason, "by an organiser" or "by the team", never who nor the
operators' detail; another team reads nothing of it; organisers read the same list."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from leaderboard import run_actions
from leaderboard.models import EvaluationRun
from leaderboard.standing import change_standing

State = EvaluationRun.State


@pytest.fixture
def acted(teams, splits, make_entry, make_user, challenge) -> dict[str, EvaluationRun]:
    """alpha's run cancelled by an organiser (with an operator's detail), then its submission
    hidden; beta's run untouched."""
    organiser = make_user("olga")
    challenge.organisers.add(organiser)
    alpha = make_entry(teams["alpha"], splits["public-test"], 0.8, state=State.RUNNING)
    beta = make_entry(teams["beta"], splits["public-test"], 0.5)
    run_actions.cancel([alpha], organiser, "stuck for a day", detail="worker gpu-7 silent")
    change_standing("hide", [alpha.submission], organiser, "under review")
    return {"alpha": alpha, "beta": beta}


def _submissions(user) -> dict[int, dict[str, object]]:
    api = APIClient()
    api.force_authenticate(user)
    answer = api.get("/api/submissions/")
    assert answer.status_code == 200
    return {s["id"]: s for s in answer.json()["results"]}


def test_the_team_reads_the_standing_and_each_action_with_its_reason(acted, teams, make_user):
    alpha = acted["alpha"]
    mine = _submissions(make_user("alice", team=teams["alpha"]))
    submission = mine[alpha.submission_id]
    assert submission["standing"] == "hidden"
    actions = [{k: v for k, v in a.items() if k != "at"} for a in submission["actions"]]
    assert actions == [
        {"kind": "hide", "run": None, "by": "an organiser", "why": "under review"},
        {"kind": "cancel", "run": alpha.pk, "by": "an organiser", "why": "stuck for a day"},
    ]
    assert "olga" not in str(submission) and "gpu-7" not in str(submission)
    (run,) = submission["runs"]
    assert run["failure_reason"] == "An organiser cancelled this run: stuck for a day"
    # another team reads nothing of it; its own submission has none
    theirs = _submissions(make_user("bob", team=teams["beta"]))
    assert set(theirs) == {acted["beta"].submission_id}
    assert theirs[acted["beta"].submission_id]["actions"] == []
    assert theirs[acted["beta"].submission_id]["standing"] == "shown"


def test_a_members_own_cancel_reads_by_the_team(teams, splits, make_entry, make_user):
    member = make_user("alice", team=teams["alpha"])
    run = make_entry(teams["alpha"], splits["public-test"], 0.8, state=State.RUNNING)
    run_actions.cancel_own(run, member)
    (action,) = _submissions(member)[run.submission_id]["actions"]
    assert (action["kind"], action["by"], action["run"]) == ("cancel", "the team", run.pk)
    # it stays the team's once the member has left; an organiser in the team acts as organiser
    member.memberships.all().delete()
    organiser = make_user("olga", team=teams["alpha"])
    run.task.challenge.organisers.add(organiser)
    other = make_entry(teams["alpha"], splits["public-test"], 0.7, state=State.RUNNING)
    run_actions.cancel([other], organiser, "duplicate run")
    seen = {a["run"]: a["by"] for a in _submissions(organiser)[other.submission_id]["actions"]}
    assert seen == {other.pk: "an organiser"}
    seen = {a["run"]: a["by"] for a in _submissions(organiser)[run.submission_id]["actions"]}
    assert seen == {run.pk: "the team"}


def test_organisers_read_every_submissions_actions_in_a_bounded_number_of_queries(
    acted, teams, splits, make_entry, make_user, challenge
):
    organiser = challenge.organisers.get()
    for _ in range(3):
        run = make_entry(teams["gamma"], splits["validation"], 0.1, state=State.RUNNING)
        run_actions.cancel([run], organiser, "too many at once")
    with CaptureQueriesContext(connection) as few:
        listed = _submissions(organiser)
    assert len(listed) == 5
    assert listed[acted["alpha"].submission_id]["actions"][0]["why"] == "under review"
    for _ in range(3):
        make_entry(teams["gamma"], splits["validation"], 0.1)
    with CaptureQueriesContext(connection) as more:
        assert len(_submissions(organiser)) == 8
    assert len(more.captured_queries) <= len(few.captured_queries) + 3
