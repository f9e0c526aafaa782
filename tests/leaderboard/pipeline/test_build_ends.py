"""A submission's build always ends: a failure on Podium's side (a fault, retries spent, a
worker lost too often) ends an unbuilt submission ``podium-failed``, refunded, and its other
runs with it; an organiser's re-run starts it again (a real base image missing, end to end:
tests/leaderboard/pipeline/test_stage_tasks.py)."""

from __future__ import annotations

import pytest

from leaderboard import run_actions
from leaderboard.models import EvaluationRun, Submission
from leaderboard.models.submission import PODIUM_BUILD_REASON
from leaderboard.pipeline import stage_tasks
from leaderboard.pipeline.ownership import PODIUM_FAULT_REASON, fail_for_podium
from leaderboard.tasks import requeue_stale_runs

pytestmark = pytest.mark.django_db
State = EvaluationRun.State
Sub = Submission.State


def _podium_failed(run: EvaluationRun) -> tuple[str, str, str]:
    run.refresh_from_db()
    return run.state, run.failure_kind, run.failure_reason


def _submission(run: EvaluationRun) -> tuple[str, str, bool]:
    s = Submission.objects.get(pk=run.submission_id)
    return s.state, s.failure_reason, s.consumes_quota


def test_a_build_failed_on_podiums_side_ends_the_submission_refunded(pipeline_run):
    run = pipeline_run(State.BUILDING, state=Sub.BUILDING)
    fail_for_podium(run, "submission #1: Podium's base image podium/agent-base:cuda12 is missing")
    assert _podium_failed(run) == (State.FAILED, "podium", PODIUM_FAULT_REASON)
    assert _submission(run) == (Sub.PODIUM_FAILED, PODIUM_BUILD_REASON, False)
    assert Submission.State(Sub.PODIUM_FAILED).label == "failed on Podium's side (refunded)"


def test_a_ready_submission_stays_ready_when_a_later_build_stage_fails(pipeline_run):
    run = pipeline_run(State.BUILDING, state=Sub.READY, image_digest="sha256:" + "a" * 64)
    fail_for_podium(run, "the stored image archive is unreadable")
    assert _submission(run) == (Sub.READY, "", False)  # refunded, its image kept
    running = pipeline_run(State.RUNNING, state=Sub.RECEIVED)
    fail_for_podium(running, "no search corpus")  # not the build: the submission is not ended
    assert _submission(running) == (Sub.RECEIVED, "", False)


def test_an_engine_unreachable_through_every_retry_ends_the_build(pipeline_run, monkeypatch):
    """The stage task's last retry (``MAX_INFRASTRUCTURE_RETRIES``) fails the run for Podium,
    and the submission the build never made ends with it."""
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    run = pipeline_run(State.QUEUED)
    Submission.objects.filter(pk=run.submission_id).update(state=Sub.BUILDING)
    result = stage_tasks.build_task.apply(
        kwargs={"run_id": run.pk}, retries=stage_tasks.MAX_INFRASTRUCTURE_RETRIES
    )
    assert result.get() == State.FAILED
    assert _podium_failed(run) == (State.FAILED, "podium", PODIUM_FAULT_REASON)
    assert "gave up after 20 retries" in run.operator_detail
    assert "does not answer" in run.operator_detail
    assert _submission(run) == (Sub.PODIUM_FAILED, PODIUM_BUILD_REASON, False)


def test_a_worker_lost_too_often_while_building_ends_the_build(pipeline_run, settings):
    settings.PODIUM_RUN_MAX_ATTEMPTS = 1
    run = pipeline_run(State.BUILDING, silent_s=settings.PODIUM_HEARTBEAT_TIMEOUT_S + 5)
    assert requeue_stale_runs() == {"requeued": [], "failed": [run.pk]}
    assert _podium_failed(run)[:2] == (State.FAILED, "lost_worker")
    assert _submission(run) == (Sub.PODIUM_FAILED, PODIUM_BUILD_REASON, False)


def test_the_other_runs_of_a_podium_failed_submission_fail_the_same_way(
    pipeline_run, splits, organiser_user
):
    first = pipeline_run(State.BUILDING)
    fail_for_podium(first, "base image missing")
    other = EvaluationRun.objects.create(
        submission=first.submission, task=first.task, split=splits["validation"]
    )
    result = stage_tasks.build_task.apply(kwargs={"run_id": other.pk})  # no engine is asked
    assert result.get() == State.FAILED
    assert _podium_failed(other) == (State.FAILED, "podium", PODIUM_FAULT_REASON)
    assert "its build failed on Podium's side" in other.operator_detail

    # an organiser's re-run starts the build again from "received"; the refund stays
    assert run_actions.rerun([first], organiser_user, "base image built") == []
    assert _submission(first) == (Sub.RECEIVED, "", False)


@pytest.fixture
def organiser_user(make_user):
    user = make_user("org", staff=True)
    user.is_superuser = True
    user.save()
    return user
