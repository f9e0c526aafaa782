"""Which worker owns a run, heartbeats while it works, and handing a run to the next stage.

A stage task owns a run when it moved it into its stage (from ``queued``: a first delivery, or
a resume after a lost worker) or claimed it after the previous stage handed it over (state set
to the stage with no ``worker_id``). Anything else (a duplicate delivery, a run another worker
holds, a finished run) is "not mine" and the task does nothing. A handed-over run waits in its
queue without a worker, so the reaper leaves it alone until a worker claims it.

Each successful claim records the worker's dead time: how long this process was idle since its
previous stage task ended (``stage_ended``), per node, for ``/metrics``.

The heartbeat reaper leaves a handed-over run alone; the unclaimed reaper sends its stage task
again only when no worker claimed it long after ``claim_due_at`` (the message was lost with the
broker's data): a second message for a run already claimed is "not mine".
"""

from __future__ import annotations

import contextvars
import logging
import os
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta

from django.conf import settings
from django.db import close_old_connections, connections
from django.utils import timezone
from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception,
    stop_after_delay,
    wait_exponential,
)

from leaderboard.models import EvaluationRun, InvalidTransition, Submission
from leaderboard.tasks import dispatch_stage
from podium.monitoring_events import STAGE_RETRIES, WORKER_DEAD_TIME, record
from workers.faults import is_database_error, is_transient

logger = logging.getLogger("podium.pipeline")
State = EvaluationRun.State


PODIUM_FAULT_REASON = (
    "Podium could not evaluate this run because of a problem on its side; the organisers have "
    "the details. It does not count against your quota."
)


# When this process's last stage task ended (monotonic seconds); None before its first.
_idle_since: float | None = None


class RunLost(Exception):
    """The run was taken away while a worker was on it (re-queued, cancelled)."""


def worker_id() -> str:
    """This process, as recorded on the runs it works on: its node, its host (a pod's name
    where several pods share a node) and its process id."""
    return f"{settings.PODIUM_NODE_ID}/{socket.gethostname()}:{os.getpid()}"


def claim(run_id: int, stage: str) -> EvaluationRun | None:
    """The run, now owned by this worker in ``stage``; None when it is not this task's."""
    run = (
        EvaluationRun.objects.select_related("task__challenge", "split", "submission")
        .filter(pk=run_id)
        .first()
    )
    if run is None:
        logger.warning("run #%s: no such run (deleted?)", run_id)
        return None
    me = worker_id()
    first_stage = stage == State.BUILDING and run.stage == ""
    try:
        if run.state == State.QUEUED and (run.stage == stage or first_stage):
            run.move_to(stage, worker_id=me)
            return _claimed(run)
    except InvalidTransition:
        return None
    if run.state == stage and run.worker_id == "":
        now = timezone.now()
        taken = EvaluationRun.objects.filter(pk=run.pk, state=stage, worker_id="").update(
            worker_id=me, heartbeat_at=now, retry_reason=""
        )
        if taken == 1:
            run.worker_id, run.heartbeat_at, run.retry_reason = me, now, ""
            return _claimed(run)
    logger.info("run #%s is %s (worker %r): not mine", run.pk, run.state, run.worker_id)
    return None


def _claimed(run: EvaluationRun) -> EvaluationRun:
    if _idle_since is not None:
        idle = max(0.0, time.monotonic() - _idle_since)
        record(WORKER_DEAD_TIME, idle, node=settings.PODIUM_NODE_ID)
    logger.info("run #%s: claimed for %s by %s", run.pk, run.state, run.worker_id)
    return run


def stage_ended() -> None:
    """This process finished a stage task it had claimed: it is idle from now on."""
    global _idle_since
    _idle_since = time.monotonic()


def while_database_returns() -> Retrying:
    """Calls a database write again while the database is unreachable (a restart), for up to
    ``PODIUM_DB_RETRY_S``, reconnecting between tries; then the error is raised."""
    return Retrying(
        retry=retry_if_exception(is_database_error),
        stop=stop_after_delay(settings.PODIUM_DB_RETRY_S),
        wait=wait_exponential(multiplier=0.25, max=5),
        before_sleep=_reconnect,
        reraise=True,
    )


def _reconnect(state: RetryCallState) -> None:
    error = state.outcome.exception() if state.outcome else None
    logger.warning("database unreachable (%s); trying again", str(error).strip()[:200])
    close_old_connections()  # a connection that failed is closed, the next try opens one


def hand_over(run: EvaluationRun, stage: str) -> None:
    """Move the run to ``stage``, unowned, and send that stage's task (logged: with the next
    worker's "claimed" line, how long the run waited in that stage's queue)."""
    run.move_to(stage, worker_id="")
    dispatch_stage(run, stage)
    logger.info("run #%s: handed over to %s", run.pk, stage)


def fail_for_podium(run: EvaluationRun, detail: str) -> None:
    """Fail the run for a reason on Podium's side: participant-safe reason, quota refunded. A
    run that failed building an image not made yet ends its submission too (``podium-failed``:
    ``Submission.build_failed_for_podium``); its other runs then fail the same way."""
    logger.error("run #%s failed on Podium's side: %s", run.pk, detail)
    run.move_to(
        State.FAILED,
        failure_reason=PODIUM_FAULT_REASON,
        operator_detail=detail,
        failure_kind=EvaluationRun.FailureKind.PODIUM,
    )
    if run.stage != State.BUILDING or not Submission.build_failed_for_podium(run.submission_id):
        Submission.objects.filter(pk=run.submission_id).update(consumes_quota=False)


def release(run: EvaluationRun, fault: Exception, countdown_s: float = 0) -> None:
    """Give up ownership before a retry due in ``countdown_s``, keeping ``fault`` for operators
    (the run's ``retry_reason``, the retries counted in ``/metrics``); the state stays, and the
    run is due to be claimed again when the retry is (the unclaimed reaper waits for that)."""
    reason = f"{type(fault).__name__}: {fault}"[:300]
    due = timezone.now() + timedelta(seconds=countdown_s)
    EvaluationRun.objects.filter(pk=run.pk, state=run.state, worker_id=worker_id()).update(
        worker_id="", retry_reason=reason, claim_due_at=due
    )
    record(STAGE_RETRIES, stage=run.state, fault=type(fault).__name__)


def beat_if_mine(run: EvaluationRun, items_done: int | None = None) -> bool:
    """A heartbeat (and progress) while the run is still this worker's; False when it is not."""
    changes: dict[str, object] = {"heartbeat_at": timezone.now()}
    if items_done is not None:
        changes["items_done"] = items_done
    mine = EvaluationRun.objects.filter(pk=run.pk, state=run.state, worker_id=worker_id())
    return mine.update(**changes) == 1


@contextmanager
def heartbeats(run: EvaluationRun, interval_s: float | None = None) -> Iterator[None]:
    """Beat for ``run`` from a thread while the block runs (image builds, model loading, long
    batches, slow judges); it stops once the run is no longer this worker's."""
    interval = interval_s or max(1.0, settings.PODIUM_HEARTBEAT_TIMEOUT_S / 5)
    stop = threading.Event()

    def beat() -> None:
        try:
            while not stop.wait(interval):
                close_old_connections()
                try:
                    if not beat_if_mine(run):
                        return
                except Exception as exc:  # the database restarting: beat again next time
                    if not is_transient(exc):
                        raise
                    logger.warning("run #%s: heartbeat failed (%s)", run.pk, exc)
        except Exception:  # a bug: the reaper decides, the work goes on
            logger.exception("run #%s: heartbeat failed", run.pk)
        finally:
            connections.close_all()

    thread = threading.Thread(  # in this context: its log lines carry the run id
        target=contextvars.copy_context().run, args=(beat,), name=f"heartbeat-{run.pk}", daemon=True
    )
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
