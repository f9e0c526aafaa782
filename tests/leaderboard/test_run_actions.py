"""Organisers re-run, re-judge and cancel runs from the admin: each logged with who and why,
refused where the run's state does not allow it; the raw run fields are read-only."""

from __future__ import annotations

import pytest
from django.contrib.admin import helpers
from django.urls import reverse

from leaderboard import run_actions
from leaderboard.models import (
    EvaluationRun,
    ItemAnswer,
    ItemVerdict,
    RunAction,
    SliceScore,
    Submission,
)
from podium.celery import app

State = EvaluationRun.State
CHANGELIST = reverse("admin:leaderboard_evaluationrun_changelist")


@pytest.fixture
def sent(monkeypatch) -> list[tuple[str, int, str]]:
    """The stage tasks sent: (task name, run id, queue)."""
    calls: list[tuple[str, int, str]] = []
    monkeypatch.setattr(
        app, "send_task", lambda name, kwargs, queue: calls.append((name, kwargs["run_id"], queue))
    )
    return calls


@pytest.fixture
def done_run(teams, splits, make_entry) -> EvaluationRun:
    run = make_entry(teams["alpha"], splits["public-test"], 0.4, method="alpha-m")
    answer = ItemAnswer.objects.create(run=run, group="s1", item_key="i1", position=0, response="x")
    ItemVerdict.objects.create(answer=answer, verdict="correct", judge_id="rules@1")
    return run


@pytest.fixture
def organiser(make_user):
    user = make_user("org", staff=True)
    user.is_superuser = True
    user.save()
    return user


def test_a_done_run_is_rerun_from_nothing_and_the_action_logged(
    done_run, organiser, sent, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        refused = run_actions.rerun([done_run], organiser, "  the split was re-imported ")
    assert refused == []
    done_run.refresh_from_db()
    assert (done_run.state, done_run.stage, done_run.attempt, done_run.finished_at) == (
        State.QUEUED, "", 0, None,
    )  # fmt: skip
    assert not done_run.answers.exists() and not SliceScore.objects.filter(run=done_run).exists()
    assert "re-run by org: the split was re-imported" in done_run.operator_detail
    (action,) = RunAction.objects.all()
    assert (action.kind, action.by, action.why, action.from_state) == (
        "rerun", organiser, "the split was re-imported", State.DONE,
    )  # fmt: skip
    assert sent == [("build.prepare_run", done_run.pk, "build")]


def test_a_failed_build_is_tried_again_on_rerun(done_run, organiser, sent):
    EvaluationRun.objects.filter(pk=done_run.pk).update(state=State.FAILED, failure_reason="x")
    Submission.objects.filter(pk=done_run.submission_id).update(
        state=Submission.State.FAILED, failure_reason="base image missing"
    )
    assert run_actions.rerun(EvaluationRun.objects.all(), organiser, "base image restored") == []
    submission = Submission.objects.get(pk=done_run.submission_id)
    assert (submission.state, submission.failure_reason) == (Submission.State.RECEIVED, "")
    assert EvaluationRun.objects.get(pk=done_run.pk).failure_reason == ""


def test_a_done_run_is_rejudged_keeping_its_answers(
    done_run, organiser, sent, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        assert run_actions.rejudge([done_run], organiser, "new judge prompt") == []
    done_run.refresh_from_db()
    assert (done_run.state, done_run.worker_id, done_run.scores_complete) == (
        State.JUDGING, "", False,
    )  # fmt: skip
    assert done_run.answers.count() == 1 and not ItemVerdict.objects.exists()
    assert sent == [("judge.judge_run", done_run.pk, "judge")]


def test_an_unfinished_run_is_cancelled_the_team_reading_the_reason_not_the_detail(
    done_run, organiser, sent
):
    EvaluationRun.objects.filter(pk=done_run.pk).update(state=State.RUNNING, worker_id="w1")
    refused = run_actions.cancel([done_run], organiser, "the team asked", detail="gpu-7 is flaky")
    assert refused == []
    done_run.refresh_from_db()
    assert done_run.state == State.CANCELLED
    assert done_run.failure_reason == "An organiser cancelled this run: the team asked"
    assert done_run.operator_detail.startswith("cancelled by org: ")  # who: not the team's
    assert RunAction.objects.get().detail == "gpu-7 is flaky"
    assert sent == []


def test_actions_the_state_does_not_allow_are_refused_and_not_logged(done_run, organiser, sent):
    assert run_actions.cancel([done_run], organiser, "why not") == [
        f"run #{done_run.pk}: it is already done"
    ]
    EvaluationRun.objects.filter(pk=done_run.pk).update(state=State.RUNNING)
    assert run_actions.rerun([done_run], organiser, "again") == [
        f"run #{done_run.pk}: it is running; cancel it first"
    ]
    assert run_actions.rejudge([done_run], organiser, "again") == [
        f"run #{done_run.pk}: it is running; only a done run is re-judged"
    ]
    with pytest.raises(run_actions.RunActionRefused, match="say why"):
        run_actions.cancel([done_run], organiser, "   ")
    assert not RunAction.objects.exists() and sent == []


def test_the_admin_asks_why_then_acts_and_keeps_run_fields_read_only(
    client, done_run, organiser, sent, splits, make_entry, teams
):
    client.force_login(organiser)
    running = make_entry(teams["beta"], splits["public-test"], 0.2, state=State.RUNNING)
    chosen = {"action": "cancel", helpers.ACTION_CHECKBOX_NAME: [done_run.pk, running.pk]}
    page = client.post(CHANGELIST, chosen)
    assert page.status_code == 200 and "Why (kept with the action" in page.content.decode()
    assert EvaluationRun.objects.get(pk=running.pk).state == State.RUNNING  # nothing done yet
    page = client.post(CHANGELIST, {**chosen, "why": ""})
    assert "say why" in page.content.decode()
    response = client.post(CHANGELIST, {**chosen, "why": "wrong split"}, follow=True)
    shown = response.content.decode()
    assert "Cancel: 1 run(s)" in shown and f"run #{done_run.pk}: it is already done" in shown
    assert EvaluationRun.objects.get(pk=running.pk).state == State.CANCELLED
    assert RunAction.objects.get().why == "wrong split"

    change = client.get(reverse("admin:leaderboard_evaluationrun_change", args=[running.pk]))
    html = change.content.decode()
    assert 'name="state"' not in html and 'name="failure_reason"' not in html
    assert "wrong split" in html  # the action, listed on the run
    assert client.get(reverse("admin:leaderboard_evaluationrun_add")).status_code == 403


def test_the_admin_offers_no_unlogged_delete_of_runs(client, done_run, organiser):
    client.force_login(organiser)
    page = client.get(CHANGELIST).content.decode()
    assert 'name="action"' in page  # the logged actions are offered
    assert "delete_selected" not in page


def test_a_submissions_standing_is_read_only_in_the_admin(client, done_run, organiser):
    client.force_login(organiser)
    url = reverse("admin:leaderboard_submission_change", args=[done_run.submission_id])
    page = client.get(url).content.decode()
    assert "on the boards" in page  # shown
    assert 'name="standing"' not in page  # never edited there: the panel's actions log it
