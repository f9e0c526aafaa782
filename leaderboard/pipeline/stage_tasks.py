"""The Celery stage tasks of an evaluation run: ``<stage>_task`` does
``leaderboard.pipeline.<stage>.<stage>_stage`` (Celery names in ``leaderboard.tasks.STAGE_TASKS``).

Each takes ``run_id``, is acknowledged late and may be delivered twice: it first claims the run
(``leaderboard.pipeline.ownership``) and does nothing when the run is not its own. The work itself
lives in ``leaderboard.pipeline``; these functions only decide what happens after it:

- a transient error (``workers.faults.is_transient``: the Docker engine, the database, the
  broker or object storage unreachable) gives the run back and retries the task with
  exponential backoff;
- a fault on Podium's side (configuration, stored data) or an unexpected error fails the run
  with a participant-safe reason and refunds the quota;
- ``InvalidTransition``: someone else moved the run meanwhile; it is not ours any more;
- judging retries, without limit, while some turns are unjudged (the judge endpoint is down).
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Callable

from celery import Task as CeleryTask
from celery import shared_task
from celery.signals import worker_ready
from celery.worker.consumer import Consumer
from django.conf import settings

from leaderboard.judge_preview import PREVIEW_TASK
from leaderboard.models import EvaluationRun, InvalidTransition, JudgePreview
from leaderboard.pipeline.build import build_stage, engine_is_fake
from leaderboard.pipeline.judge import judge_stage
from leaderboard.pipeline.node import runs_containers, serves_runs, start_exporter, start_janitor
from leaderboard.pipeline.ownership import (
    RunLost,
    claim,
    fail_for_podium,
    hand_over,
    heartbeats,
    release,
    stage_ended,
    while_database_returns,
)
from leaderboard.pipeline.preview import dry_run
from leaderboard.pipeline.run import run_stage
from leaderboard.pipeline.score import score_stage
from leaderboard.tasks import STAGE_TASKS
from podium.logs import run_context
from workers.faults import PodiumFault, is_transient

logger = logging.getLogger("podium.pipeline")
State = EvaluationRun.State
MAX_INFRASTRUCTURE_RETRIES = 20
# A bound task of this module: called with a run's (or a preview's) id, returns what became of it.
StageTask = CeleryTask[[int], str]


def _task(name: str) -> Callable[[Callable[[StageTask, int], str]], StageTask]:
    """The decorator of a task named ``name``: bound, acknowledged late (a task whose worker
    was lost is delivered again) and retried without limit (``_work`` decides when to stop)."""
    return shared_task(
        name=name, bind=True, acks_late=True, reject_on_worker_lost=True, max_retries=None
    )


def backoff_s(retries: int) -> int:
    """Seconds before retry number ``retries + 1``: doubling from the configured base."""
    base, cap = settings.PODIUM_RETRY_BACKOFF_S, settings.PODIUM_RETRY_BACKOFF_MAX_S
    return int(min(cap, base * 2 ** min(retries, 16)))


def _give_back(run: EvaluationRun, fault: Exception, countdown_s: int) -> None:
    try:  # the database may be restarting: wait for it (PODIUM_DB_RETRY_S)
        while_database_returns()(release, run, fault, countdown_s)
    except Exception as exc:
        if not is_transient(exc):
            raise
        logger.warning("run #%s: could not release it (%s); the reaper will", run.pk, exc)


class RetryLater(Exception):
    """The stage cannot finish yet (e.g. unjudged turns): give the run back, retry the task."""


def _stage(task: StageTask, stage: str, run_id: int, work: Callable[[EvaluationRun], None]) -> str:
    """Claim the run, do ``work`` and decide what a failure means; returns the run's state.
    Every log line written meanwhile carries the run id (``podium.logs``)."""
    with run_context(run_id):
        try:
            run = claim(run_id, stage)
        except Exception as exc:
            if not is_transient(exc):
                raise
            raise task.retry(exc=exc, countdown=backoff_s(task.request.retries)) from exc
        if run is None:
            return "not mine"
        try:
            return _work(task, stage, run, work)
        finally:
            stage_ended()


def _work(
    task: StageTask, stage: str, run: EvaluationRun, work: Callable[[EvaluationRun], None]
) -> str:
    run_id = run.pk
    try:
        with heartbeats(run):
            work(run)
        return run.state
    except (InvalidTransition, RunLost) as exc:
        logger.info("run #%s: %s", run_id, exc)
        return "not mine"
    except RetryLater as exc:
        countdown = backoff_s(task.request.retries)
        _give_back(run, exc, countdown)
        logger.warning("run #%s in %s: %s; again in %s s", run_id, stage, exc, countdown)
        raise task.retry(exc=exc, countdown=countdown) from exc
    except PodiumFault as exc:  # BundleError, BaseImageMissing, ... too
        fail_for_podium(run, str(exc))
        return run.state
    except Exception as exc:
        if not is_transient(exc):
            fail_for_podium(run, traceback.format_exc()[-4000:])
            return run.state
        if task.request.retries >= MAX_INFRASTRUCTURE_RETRIES:
            _give_back(run, exc, 0)
            fail_for_podium(run, f"gave up after {task.request.retries} retries: {exc!r}")
            return run.state
        countdown = backoff_s(task.request.retries)
        _give_back(run, exc, countdown)
        logger.warning("run #%s in %s: %r; retrying in %s s", run_id, stage, exc, countdown)
        raise task.retry(exc=exc, countdown=countdown) from exc


def _judge(run: EvaluationRun) -> None:
    unjudged = judge_stage(run)
    if unjudged:
        raise RetryLater(f"{unjudged} turn(s) unjudged (judge endpoint unreachable?)")
    hand_over(run, State.SCORING)


@_task(STAGE_TASKS[State.BUILDING])
def build_task(self: StageTask, run_id: int) -> str:
    return _stage(self, State.BUILDING, run_id, build_stage)


@_task(STAGE_TASKS[State.RUNNING])
def run_task(self: StageTask, run_id: int) -> str:
    return _stage(self, State.RUNNING, run_id, run_stage)


@_task(STAGE_TASKS[State.JUDGING])
def judge_task(self: StageTask, run_id: int) -> str:
    return _stage(self, State.JUDGING, run_id, _judge)


@_task(STAGE_TASKS[State.SCORING])
def score_task(self: StageTask, run_id: int) -> str:
    return _stage(self, State.SCORING, run_id, score_stage)


@_task(PREVIEW_TASK)
def preview_judge(self: StageTask, preview_id: int) -> str:
    """A judge change's dry run (``leaderboard.pipeline.preview``): retried with back-off while
    the candidate leaves items undecided or a service is unreachable, failed (the reason kept
    on the preview) on anything else; resumed from the runs it has not graded."""
    try:
        left = dry_run(preview_id)
    except JudgePreview.DoesNotExist:
        return "gone"
    except Exception as exc:
        if not is_transient(exc) or self.request.retries >= MAX_INFRASTRUCTURE_RETRIES:
            logger.exception("judge preview #%s failed", preview_id)
            detail = str(exc) if isinstance(exc, PodiumFault) else traceback.format_exc()[-4000:]
            JudgePreview.objects.filter(pk=preview_id).update(
                state=JudgePreview.State.FAILED, error=detail
            )
            return JudgePreview.State.FAILED
        raise self.retry(exc=exc, countdown=backoff_s(self.request.retries)) from exc
    if left:
        countdown = backoff_s(self.request.retries)
        JudgePreview.objects.filter(pk=preview_id).update(
            error=f"{left} run(s) with turns the judge could not decide (endpoint down?); "
            f"again in {countdown} s"
        )
        raise self.retry(countdown=countdown)
    return JudgePreview.State.DONE


@worker_ready.connect
def _janitor(sender: Consumer | None = None, **_: object) -> None:
    """On a worker whose queues start containers, the node's janitor sweeps now, then every
    interval; its exporter stores the agent images the node owes. Neither on a node of the
    fake engine (``workers.fake_engine``: no Docker engine, no image)."""
    if engine_is_fake():
        logger.warning("PODIUM_AGENT_ENGINE=fake: runs are answered by no agent (benches only)")
        return
    if sender is not None and runs_containers(queues := sender.app.amqp.queues.consume_from):
        start_janitor()
        start_exporter(serves_runs(queues))
