"""``GET /api/challenges/<slug>/quota/``: whether a team may submit on the chosen tasks, before
any upload; who may ask (anonymous, another team, the team, organisers)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from leaderboard import api_tokens
from leaderboard.models import Challenge, Phase, Split, Submission, Task
from leaderboard.submitting import Artifact, Choice, MethodInfo, submit

from .submit_support import open_splits

__all__ = ["open_splits"]  # fixtures used by name

URL = "/api/challenges/crag-mm-2026/quota/"


@pytest.fixture
def member(make_user, teams):
    return make_user("ann", team=teams["alpha"])


@pytest.fixture
def second_task(open_splits, challenge) -> Task:
    other = Task.objects.create(challenge=challenge, task_id="single-source", name="SS", order=1)
    Split.objects.create(task=other, kind=Split.Kind.VALIDATION, bundle="ss.tar", items=3)
    return other


def _api(user=None) -> APIClient:
    api = APIClient()
    if user is not None:
        key = api_tokens.create(user, "tests")[1]
        api.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return api


def _submit(user, team, tasks=()):
    ref = Artifact(Submission.ArtifactKind.REGISTRY_REF, registry_ref="a/b:1")
    challenge = Challenge.objects.get()
    return submit(team, challenge, user, ref, MethodInfo("m"), choice=Choice(tasks=tasks))


def test_the_team_reads_each_chosen_tasks_quota(member, second_task, teams):
    Task.objects.update(quota_per_day=3, quota_total=None, quota_concurrent=2)
    _submit(member, teams["alpha"], tasks=("single-source",))
    body = _api(member).get(URL).json()
    assert (body["team"], body["allowed"], body["problem"], body["exempt"]) == (
        "alpha", True, None, False,
    )  # fmt: skip
    assert body["max_artifact_bytes"] == 20 * 1024**3
    rows = {row["task"]: row for row in body["tasks"]}
    assert rows["multi-turn-qa"]["splits"] == ["validation", "public-test", "private-test"]
    assert rows["single-source"] == {
        "task": "single-source",
        "splits": ["validation"],
        "quota_per_day": 3,
        "today": 1,
        "next_daily_slot": None,
        "quota_total": None,
        "total": 1,
        "quota_concurrent": 2,
        "concurrent": 1,
        "phase": None,
        "phase_quota_per_day": None,
        "phase_today": 0,
        "phase_quota_total": None,
        "phase_total": 0,
        "remaining": 1,
        "limit": None,
        "problem": None,
    }
    chosen = _api(member).get(URL, {"tasks": "multi-turn-qa"}).json()
    assert [row["task"] for row in chosen["tasks"]] == ["multi-turn-qa"]


def test_a_spent_quota_is_refused_with_the_reason_on_the_chosen_tasks_only(
    member, second_task, teams
):
    Task.objects.update(quota_per_day=None, quota_concurrent=None)
    Task.objects.filter(task_id="single-source").update(quota_total=1)
    _submit(member, teams["alpha"], tasks=("single-source",))
    body = _api(member).get(URL).json()
    assert body["allowed"] is False
    assert body["problem"] == "Team alpha: all 1 submissions allowed on task single-source are used"
    rows = {row["task"]: row for row in body["tasks"]}
    assert rows["single-source"]["remaining"] == 0 and rows["multi-turn-qa"]["remaining"] is None
    assert _api(member).get(URL, {"tasks": "multi-turn-qa"}).json()["allowed"] is True


def test_a_wrong_choice_a_closed_phase_and_another_team_are_refused(
    member, second_task, teams, make_user
):
    api = _api(member)
    response = api.get(URL, {"tasks": ["nope"], "splits": ["multi-turn-qa/validation"]})
    assert response.status_code == 400
    assert response.json() == {
        "tasks": ["crag-mm-2026 has no task 'nope' to evaluate on (tasks: multi-turn-qa, "
                  "single-source)"],
        "splits": ["'multi-turn-qa/validation': task multi-turn-qa is evaluated on every split "
                   "(its organisers do not let teams choose)"],
    }  # fmt: skip
    assert api.get(URL, {"team": "beta"}).status_code == 403
    assert api.get(URL, {"team": "nobody"}).json() == {"team": ["no team 'nobody'"]}
    past = timezone.now() - timedelta(days=2)
    Phase.objects.create(
        challenge=Challenge.objects.get(),
        name="Phase 1",
        starts_at=past,
        ends_at=past + timedelta(days=1),
    )
    response = api.get(URL)
    assert response.status_code == 400
    assert "takes no submissions now: no phase is open" in response.json()["non_field_errors"][0]
    assert api.get("/api/challenges/no-such/quota/").status_code == 404


def test_anonymous_callers_are_refused_and_drafts_hidden(member, open_splits):
    assert _api().get(URL).status_code in (401, 403)
    Challenge.objects.update(is_published=False)
    assert _api(member).get(URL).status_code == 404
    # the POST preflight: a challenge the user cannot see is not found before its body is read
    malformed = {"dockerfile": 7, "manifests": "not a mapping", "tasks": "x"}
    assert _api(member).post(URL, malformed, format="json").status_code == 404
    assert _api().post(URL, malformed, format="json").status_code in (401, 403)


def test_organisers_are_exempt(member, open_splits, teams):
    Task.objects.update(quota_total=0)
    assert _api(member).get(URL).json()["allowed"] is False
    Challenge.objects.get().organisers.add(member)
    body = _api(member).get(URL).json()
    assert (body["allowed"], body["exempt"], body["problem"]) == (True, True, None)
    assert body["tasks"][0]["problem"] is None
