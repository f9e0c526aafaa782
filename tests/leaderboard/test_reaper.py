"""The heartbeat reaper, sending its re-queued tasks through the real Redis broker."""

from datetime import timedelta

import pytest
import redis
from django.utils import timezone

from leaderboard.models import EvaluationRun, Submission
from leaderboard.tasks import (
    STAGE_TASKS,
    dispatch_stage,
    requeue_stale_runs,
    resend_unclaimed_runs,
)
from podium.celery import app
from tests.e2e.harness import _use_broker
from tests.leaderboard.broker import sent
from tests.services import redis_url

State = EvaluationRun.State
BROKER = redis_url("reaper")  # tests/services.py: its own database, emptied around each test


@pytest.fixture
def broker():
    """The Redis database the app publishes to in these tests."""
    previous = app.conf.broker_url
    _use_broker(BROKER)
    client = redis.Redis.from_url(BROKER)
    client.flushdb()
    yield client
    client.flushdb()
    _use_broker(previous)


@pytest.fixture
def make_run(teams, splits):
    def make(state, silent_for_s, attempt=0):
        submission = Submission.objects.create(
            team=teams["alpha"],
            challenge=splits["public-test"].task.challenge,
            artifact_kind=Submission.ArtifactKind.REGISTRY_REF,
            method_name="m",
        )
        run = EvaluationRun.objects.create(
            submission=submission,
            task=splits["public-test"].task,
            split=splits["public-test"],
            attempt=attempt,
        )
        path = [State.QUEUED, State.BUILDING, State.RUNNING, State.JUDGING, State.SCORING]
        for step in path[1 : path.index(state) + 1]:  # queued: a new run, as submitted
            run.move_to(step, worker_id="worker-1")
        EvaluationRun.objects.filter(pk=run.pk).update(
            heartbeat_at=timezone.now() - timedelta(seconds=silent_for_s)
        )
        return run

    return make


def test_silent_runs_go_back_to_their_stage_queue(
    broker, make_run, settings, django_capture_on_commit_callbacks
):
    settings.PODIUM_HEARTBEAT_TIMEOUT_S = 60
    running = make_run(State.RUNNING, silent_for_s=600)
    judging = make_run(State.JUDGING, silent_for_s=600)
    alive = make_run(State.RUNNING, silent_for_s=5)
    with django_capture_on_commit_callbacks(execute=True):
        outcome = requeue_stale_runs()
    assert sorted(outcome["requeued"]) == sorted([running.pk, judging.pk])
    running.refresh_from_db()
    assert (running.state, running.stage, running.attempt, running.worker_id) == (
        State.QUEUED,
        State.RUNNING,
        1,
        "",
    )
    assert "no heartbeat from worker worker-1" in running.operator_detail
    assert EvaluationRun.objects.get(pk=alive.pk).state == State.RUNNING
    assert sent(broker, "gpu-l40s") == [(STAGE_TASKS[State.RUNNING], {"run_id": running.pk})]
    assert sent(broker, "judge") == [(STAGE_TASKS[State.JUDGING], {"run_id": judging.pk})]


def test_a_run_past_its_attempts_fails_and_refunds_the_quota(
    broker, make_run, settings, django_capture_on_commit_callbacks
):
    settings.PODIUM_RUN_MAX_ATTEMPTS = 3
    run = make_run(State.RUNNING, silent_for_s=10_000, attempt=2)
    with django_capture_on_commit_callbacks(execute=True):
        assert requeue_stale_runs() == {"requeued": [], "failed": [run.pk]}
    run.refresh_from_db()
    assert run.state == State.FAILED
    assert "lost the worker" in run.failure_reason and "quota" in run.failure_reason
    assert "worker-1" not in run.failure_reason, "worker names are for operators"
    assert run.submission.consumes_quota is False
    assert sent(broker, "gpu-l40s") == []


def test_beat_schedule_names_the_registered_reaper():
    entry = app.conf.beat_schedule["reap-stale-runs"]
    app.loader.import_default_modules()
    assert entry["task"] in app.tasks
    assert app.tasks[entry["task"]].name == "housekeeping.reap_stale_runs"


def _waiting_for(run, seconds):
    EvaluationRun.objects.filter(pk=run.pk).update(
        claim_due_at=timezone.now() - timedelta(seconds=seconds)
    )


def test_a_run_left_unclaimed_past_the_limit_gets_its_stage_task_again_once_per_limit(
    broker, make_run, settings, django_capture_on_commit_callbacks
):
    settings.PODIUM_UNCLAIMED_RESEND_S = 60
    handed_over = make_run(State.RUNNING, silent_for_s=0)
    handed_over.move_to(State.JUDGING, worker_id="")  # its message lost with Redis's data
    _waiting_for(handed_over, 61)
    queued = make_run(State.RUNNING, silent_for_s=0)
    queued.move_to(State.QUEUED)  # re-queued by the heartbeat reaper, message lost too
    _waiting_for(queued, 600)
    recent = make_run(State.RUNNING, silent_for_s=0)
    recent.move_to(State.JUDGING, worker_id="")
    _waiting_for(recent, 30)  # within the limit: its message may still be on its way
    held = make_run(State.SCORING, silent_for_s=0)  # a worker holds it: heartbeats decide
    _waiting_for(held, 6000)
    with django_capture_on_commit_callbacks(execute=True):
        assert sorted(resend_unclaimed_runs()) == sorted([handed_over.pk, queued.pk])
    assert sent(broker, "judge") == [(STAGE_TASKS[State.JUDGING], {"run_id": handed_over.pk})]
    assert sent(broker, "gpu-l40s") == [(STAGE_TASKS[State.RUNNING], {"run_id": queued.pk})]
    assert sent(broker, "default") == []
    handed_over.refresh_from_db()
    assert (handed_over.state, handed_over.worker_id, handed_over.attempt) == (
        State.JUDGING,
        "",
        0,
    ), "re-sending changes nothing of the run itself"
    with django_capture_on_commit_callbacks(execute=True):
        assert resend_unclaimed_runs() == [], "once per limit, not once per reaper pass"
    assert len(sent(broker, "judge")) == 1


def test_a_run_given_back_until_its_retry_is_due_is_not_resent_before_then(
    broker, make_run, settings, django_capture_on_commit_callbacks
):
    settings.PODIUM_UNCLAIMED_RESEND_S = 60
    run = make_run(State.JUDGING, silent_for_s=0)
    EvaluationRun.objects.filter(pk=run.pk).update(
        worker_id="", claim_due_at=timezone.now() + timedelta(seconds=500)
    )  # leaderboard.pipeline.ownership.release with the judge's next retry 500 s away
    later = timezone.now() + timedelta(seconds=530)
    with django_capture_on_commit_callbacks(execute=True):
        assert resend_unclaimed_runs(now=later) == []
        assert resend_unclaimed_runs(now=later + timedelta(seconds=60)) == [run.pk]
    assert sent(broker, "judge") == [(STAGE_TASKS[State.JUDGING], {"run_id": run.pk})]


def test_a_new_run_whose_first_message_was_lost_is_sent_to_the_build_stage(
    broker, make_run, settings, django_capture_on_commit_callbacks
):
    settings.PODIUM_UNCLAIMED_RESEND_S = 5
    run = make_run(State.QUEUED, silent_for_s=0)
    with django_capture_on_commit_callbacks(execute=True):
        assert resend_unclaimed_runs() == [], "just created: its message is on its way"
        later = timezone.now() + timedelta(seconds=6)
        assert resend_unclaimed_runs(now=later) == [run.pk]
    assert sent(broker, "build") == [(STAGE_TASKS[State.BUILDING], {"run_id": run.pk})]


def test_a_stage_task_sent_while_the_broker_is_down_leaves_the_run_waiting(
    make_run, django_capture_on_commit_callbacks
):
    previous = app.conf.broker_url
    _use_broker("redis://127.0.0.1:1/0")  # nothing listens there
    try:
        run = make_run(State.RUNNING, silent_for_s=0)
        with django_capture_on_commit_callbacks(execute=True):
            run.move_to(State.JUDGING, worker_id="")
            dispatch_stage(run, State.JUDGING)
    finally:
        _use_broker(previous)
    run.refresh_from_db()
    assert (run.state, run.worker_id) == (State.JUDGING, ""), "waits; the reaper sends it again"
