"""Where a waiting run stands in its queue, and when it may start: the run page and the API.

A run waits when no worker holds it: queued (never started, or re-queued) or handed over to its
next stage. It waits in that stage's queue (``podium.celery.queue_for``: build, a GPU class's
queue, judge, default), and the queue is served first in, first out: its place is one plus
the runs of the same queue that have waited longer (an earlier ``claim_due_at``).

The estimated start is rough: the runs ahead and those being worked on in that stage now,
shared among the workers working on it (at least one), each taking the median whole-run time
(start to end) of the task's last ``RECENT_RUNS`` done runs. With no done run yet there is no
estimate. ``depth`` is the queue's length in the broker now (messages, of every challenge);
None when Redis does not answer.

What the queue holds of other challenges (``working``, ``depth``) is the organisers' and
operators' to read: a participant reads the run's place and estimated start only
(``place_for``).
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import Q
from django.utils import timezone

from leaderboard import permissions
from leaderboard.models import EvaluationRun
from leaderboard.operations import depths
from leaderboard.tasks import STAGE_TASKS
from podium.celery import queue_for

State = EvaluationRun.State
RECENT_RUNS = 20


@dataclass(frozen=True)
class QueuePlace:
    stage: str  # the stage the run waits to enter (or go on with)
    queue: str
    position: int  # 1: the next one a worker takes
    working: int | None  # runs of this queue's stage that workers hold now (None: not shown)
    depth: int | None  # None: Redis did not answer, or not shown
    typical_run: timedelta | None  # the median time of the task's recent done runs
    estimated_start: datetime | None

    def as_dict(self) -> dict[str, object]:
        return {
            "stage": self.stage,
            "queue": self.queue,
            "position": self.position,
            "working": self.working,
            "depth": self.depth,
            "typical_run_s": self.typical_run.total_seconds() if self.typical_run else None,
            "estimated_start": self.estimated_start.isoformat() if self.estimated_start else None,
        }


def waiting_stage(run: EvaluationRun) -> str | None:
    """The stage whose queue ``run`` waits in; None when a worker holds it or it ended."""
    if run.state == State.QUEUED:
        return run.stage or State.BUILDING
    if run.state in EvaluationRun.ACTIVE_STATES and not run.worker_id:
        return str(run.state)
    return None


def _queue(run: EvaluationRun, stage: str) -> str:
    return queue_for(STAGE_TASKS[stage], run.task.effective_gpu_class)


def _in_stage(stage: str) -> Q:
    """Runs waiting for ``stage`` (queued for it, or handed over to it)."""
    queued = Q(state=State.QUEUED, stage=stage)
    if stage == State.BUILDING:
        queued |= Q(state=State.QUEUED, stage="")
    return queued | Q(state=stage, worker_id="")


def typical_run(run: EvaluationRun) -> timedelta | None:
    """The median start-to-end time of the task's last ``RECENT_RUNS`` done runs."""
    done = (
        EvaluationRun.objects.filter(task_id=run.task_id, state=State.DONE)
        .exclude(started_at=None)
        .exclude(finished_at=None)
        .order_by("-finished_at")[:RECENT_RUNS]
    )
    seconds = [
        (other.finished_at - other.started_at).total_seconds()
        for other in done.only("started_at", "finished_at")
        if other.finished_at and other.started_at
    ]
    return timedelta(seconds=statistics.median(seconds)) if seconds else None


def place_for(
    user: permissions.User, run: EvaluationRun, now: datetime | None = None
) -> QueuePlace | None:
    """``place`` as ``user`` may read it: the organisers of the run's challenge (staff too) the
    whole of it; anyone else (its team) not how many runs the queue holds or works on, which
    counts every challenge's."""
    found = place(run, now)
    if found is None or permissions.is_organiser(user, run.submission.challenge):
        return found
    return dataclasses.replace(found, working=None, depth=None)


def place(run: EvaluationRun, now: datetime | None = None) -> QueuePlace | None:
    """Where ``run`` stands in its stage's queue; None when it does not wait."""
    stage = waiting_stage(run)
    if stage is None:
        return None
    now = now or timezone.now()
    queue = _queue(run, stage)
    waiting = EvaluationRun.objects.filter(_in_stage(stage)).exclude(pk=run.pk)
    earlier = Q(claim_due_at__lt=run.claim_due_at) | Q(claim_due_at=run.claim_due_at, pk__lt=run.pk)
    ahead = sum(
        1
        for other in waiting.filter(earlier).select_related("task")
        if _queue(other, stage) == queue
    )
    held = EvaluationRun.objects.filter(state=stage).exclude(worker_id="").select_related("task")
    held_here = [other for other in held if _queue(other, stage) == queue]
    working = len(held_here)
    workers = max(1, len({other.worker_id for other in held_here}))
    typical = typical_run(run)
    estimated = None
    if typical is not None:
        estimated = now + typical * math.ceil((ahead + working) / workers)
    found = depths()
    depth = found.get(queue) if found is not None else None
    return QueuePlace(stage, queue, ahead + 1, working, depth, typical, estimated)
