"""Housekeeping tasks of the ``default`` queue: the reaper, and the sweep of agent images'
archives no run needs any more (``leaderboard.image_retention``); e-mail
(``leaderboard.mailing``): an organisers' message, a run's end (``leaderboard.run_mail``); and
a split's per-slice statistics, stored after its results change (``leaderboard.slice_store``).

A worker working on a run sends heartbeats (``EvaluationRun.beat``). When a worker dies the
heartbeats stop; the reaper moves such a run back to ``queued`` and sends the task of the stage
it was in again, so nothing stays "running" forever. Stages resume from what is stored (answers,
verdicts), so a re-queued run does not ask an item twice. After ``PODIUM_RUN_MAX_ATTEMPTS`` the
run fails, and its submission's quota is refunded: Podium, not the team, failed.

A run that waits for a worker (queued, handed over to the next stage, or given back until a
retry) and that no worker claimed ``PODIUM_UNCLAIMED_RESEND_S`` after it was due
(``claim_due_at``) lost its message (the broker restarted without its data, or was down when
the message was sent): the reaper sends its stage task again, at most once per that limit. The
run's state is untouched and claims decide: a message for a run already claimed is a no-op.
A mailing left queued so long is sent again the same way (``mailing.resend_waiting``), and so
is the task storing a split's per-slice statistics (``slice_store.resend_waiting``). It also
ranks again the public boards whose freeze began or ended since (``board_cache.
refresh_frozen``): a board nobody reads freezes and thaws on time.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from celery import Task as CeleryTask
from celery import shared_task
from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from leaderboard import board_cache, board_store, image_retention, mailing, slice_store
from leaderboard.dispatch import send_after_commit
from leaderboard.models import EvaluationRun, Submission
from podium.celery import queue_for

logger = logging.getLogger("podium")

State = EvaluationRun.State
# The Celery name of each stage's task (``pipeline.stage_tasks.<stage>_task``), called with
# ``run_id=<pk>``; the prefix picks the queue (``podium.celery.queue_for``). These wire names
# predate the stage names (build, run, judge, score) and stay: messages already in the broker
# at an upgrade carry them, and operators find them in logs and dashboards.
STAGE_TASKS: dict[str, str] = {
    State.BUILDING: "build.prepare_run",
    State.RUNNING: "gpu.answer_run",
    State.JUDGING: "judge.judge_run",
    State.SCORING: "scores.aggregate_run",
}
LOST_WORKER_REASON = (
    "Podium lost the worker evaluating this run {attempts} times; the run was stopped and "
    "does not count against your quota."
)


def dispatch_stage(run: EvaluationRun, stage: str) -> None:
    """Send the task of ``stage`` for ``run`` to its queue once the transaction commits. With
    the broker unreachable the run just waits: the unclaimed reaper sends it again later."""
    name = STAGE_TASKS[stage]
    queue = queue_for(name, run.task.effective_gpu_class)
    send_after_commit(name, {"run_id": run.pk}, f"run #{run.pk} (the reaper sends it again)", queue)


def requeue_stale_runs(now: datetime | None = None) -> dict[str, list[int]]:
    """Re-queue (or, past the attempt limit, fail) active runs without a recent heartbeat."""
    now = now or timezone.now()
    cutoff = now - timedelta(seconds=settings.PODIUM_HEARTBEAT_TIMEOUT_S)
    # A run without a worker is waiting in its stage's queue (handed over), not stale.
    stale = (
        EvaluationRun.objects.filter(state__in=EvaluationRun.ACTIVE_STATES)
        .exclude(worker_id="")
        .filter(Q(heartbeat_at__lt=cutoff) | Q(heartbeat_at__isnull=True, started_at__lt=cutoff))
    )
    outcome: dict[str, list[int]] = {"requeued": [], "failed": []}
    for run_id in list(stale.values_list("pk", flat=True)):
        with transaction.atomic():
            # Re-read under a row lock: its worker may have sent a heartbeat meanwhile.
            locked = stale.select_for_update(of=("self",)).select_related("task")
            run = locked.filter(pk=run_id).first()
            if run is None:
                continue
            outcome[_requeue_or_fail(run)].append(run.pk)
    return outcome


def _requeue_or_fail(run: EvaluationRun) -> str:
    silent_since = run.heartbeat_at or run.started_at
    detail = f"no heartbeat from worker {run.worker_id or '?'} since {silent_since:%H:%M:%S}"
    logger.warning("run #%s in %s: %s", run.pk, run.state, detail)
    if run.attempt + 1 >= settings.PODIUM_RUN_MAX_ATTEMPTS:
        run.move_to(
            State.FAILED,
            failure_reason=LOST_WORKER_REASON.format(attempts=run.attempt + 1),
            operator_detail=detail,
            failure_kind=EvaluationRun.FailureKind.LOST_WORKER,
        )
        if run.stage != State.BUILDING or not Submission.build_failed_for_podium(run.submission_id):
            Submission.objects.filter(pk=run.submission_id).update(consumes_quota=False)
        return "failed"
    requeue(run, detail)
    return "requeued"


def requeue(run: EvaluationRun, detail: str) -> None:
    """Back to ``queued`` (unless it is there) and its stage's task sent again: the stage it
    was in, or building for a run never started. The stage resumes from what is stored."""
    stage = run.stage or State.BUILDING
    if run.state != State.QUEUED:
        run.move_to(State.QUEUED, operator_detail=detail)
    dispatch_stage(run, stage)


def resend_unclaimed_runs(now: datetime | None = None) -> list[int]:
    """Send the stage task again for runs waiting without a worker long past their due time."""
    now = now or timezone.now()
    cutoff = now - timedelta(seconds=settings.PODIUM_UNCLAIMED_RESEND_S)
    waiting = EvaluationRun.objects.filter(
        state__in=(State.QUEUED, *EvaluationRun.ACTIVE_STATES),
        worker_id="",
        claim_due_at__lt=cutoff,
    )
    resent = []
    for run_id in list(waiting.values_list("pk", flat=True)):
        with transaction.atomic():
            # Re-read under a row lock: a worker may have claimed it meanwhile.
            locked = waiting.select_for_update(of=("self",)).select_related("task")
            run = locked.filter(pk=run_id).first()
            if run is None:
                continue
            stage = run.state if run.state != State.QUEUED else run.stage or State.BUILDING
            logger.warning(
                "run #%s waits in %s unclaimed since %s: sending %s again",
                run.pk, run.state, f"{run.claim_due_at:%H:%M:%S}", STAGE_TASKS[stage],
            )  # fmt: skip
            EvaluationRun.objects.filter(pk=run.pk).update(claim_due_at=now)
            dispatch_stage(run, stage)
            resent.append(run.pk)
    return resent


@shared_task(name="housekeeping.reap_stale_runs")
def reap_stale_runs() -> dict[str, list[int]]:
    outcome = requeue_stale_runs()
    outcome["resent"] = resend_unclaimed_runs()
    outcome["mailings_resent"] = mailing.resend_waiting()
    outcome["slice_statistics_resent"] = slice_store.resend_waiting()
    outcome["boards_refrozen"] = board_cache.refresh_frozen()
    return outcome


@shared_task(name="housekeeping.sweep_image_archives")
def sweep_image_archives() -> dict[str, object]:
    swept = image_retention.sweep()
    return {"removed": swept.removed, "freed_bytes": swept.freed_bytes, "adopted": swept.adopted}


def _deliver(task: CeleryTask[..., None], mailing_id: int) -> None:
    """Deliver a mailing (``leaderboard.mailing.deliver``); a mail server's transient error
    tries again later, with back-off, ``MAIL_TRIES`` times in all, then the mailing fails."""
    try:
        mailing.deliver(mailing_id)
    except mailing.TRANSIENT_MAIL_ERRORS as exc:
        tries = task.request.retries + 1
        if tries >= mailing.MAIL_TRIES:
            logger.warning("mailing #%s failed after %s tries: %s", mailing_id, tries, exc)
            mailing.give_up(mailing_id, exc)
            return
        logger.warning("mailing #%s: %s; trying again (try %s)", mailing_id, exc, tries + 1)
        raise task.retry(exc=exc, countdown=mailing.RETRY_BACKOFF_S * 2 ** (tries - 1)) from exc


@shared_task(name="mail.deliver", bind=True, max_retries=None)
def deliver_mailing(self: CeleryTask[[int], None], mailing_id: int) -> None:
    _deliver(self, mailing_id)


@shared_task(name=board_store.SLICE_STATISTICS_TASK)
def store_slice_statistics(split_id: int, results_version: str) -> dict[str, object]:
    """Every slice dimension's statistics of the split for ``results_version``, stored
    (``slice_store.store_all``; nothing when its results changed since)."""
    return slice_store.store_all(split_id, results_version)
