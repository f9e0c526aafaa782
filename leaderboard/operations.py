"""What the operator page shows: live workers and their nodes, queue depths, and the runs that
need an operator (stuck, retrying, waiting long in a queue).

Workers are known two ways, merged by node (host name): Celery's broadcast (``inspect``: every
worker that answers within ``INSPECT_TIMEOUT_S``, its queues and the stage tasks it is running)
and the heartbeats runs record (``worker_id`` is ``<node>/<host>:<pid>``), which also name workers
that are too busy to answer.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import redis
from django.db.models import QuerySet
from django.utils import timezone
from kombu.exceptions import KombuError

from leaderboard.models import EvaluationRun, RunAction
from leaderboard.monitoring import queue_depths, stale_cutoff
from podium import monitoring_events
from podium.celery import app

logger = logging.getLogger("podium.operations")
INSPECT_TIMEOUT_S = 1.0
# A run waiting in a queue (no worker) longer than this is listed as waiting long.
WAITING_LONG = timedelta(minutes=10)


@dataclass
class Worker:
    node: str
    names: list[str] = field(default_factory=list)  # Celery's, e.g. celery@gpu-node-1
    queues: list[str] = field(default_factory=list)
    runs: list[EvaluationRun] = field(default_factory=list)  # active runs it holds
    answered: bool = False  # answered Celery's broadcast just now
    tasks: int = 0  # stage tasks it is running, as it says


@dataclass
class Attention:
    """A run that needs an operator: why, in words, and the reason a re-queue keeps."""

    run: EvaluationRun
    kind: str  # stuck, retrying, waiting
    reason: str


def _node(name: str) -> str:
    """``celery@host`` and a run's ``node/host:pid`` (``ownership.worker_id``) both name the
    worker's host ``host``: Celery names a worker by its host, not by ``PODIUM_NODE_ID``."""
    return name.split("@", 1)[-1].rsplit(":", 1)[0].rsplit("/", 1)[-1]


def _celery_workers() -> dict[str, Worker]:
    """The workers that answer Celery's broadcast, with their queues and running tasks."""
    try:
        inspect = app.control.inspect(timeout=INSPECT_TIMEOUT_S)
        queues = inspect.active_queues() or {}
        active = inspect.active() or {}
    except (KombuError, OSError, redis.RedisError) as exc:
        logger.warning("operator page: Celery's broadcast failed: %s", exc)
        return {}
    workers: dict[str, Worker] = {}
    for name in sorted(set(queues) | set(active)):
        worker = workers.setdefault(_node(name), Worker(_node(name)))
        worker.names.append(name)
        worker.queues += sorted(q["name"] for q in queues.get(name, []))
        worker.tasks += len(active.get(name, []))
        worker.answered = True
    return workers


def active_runs() -> QuerySet[EvaluationRun]:
    return EvaluationRun.objects.filter(state__in=EvaluationRun.ACTIVE_STATES).select_related(
        "submission__team", "task__challenge", "split"
    )


def workers() -> list[Worker]:
    """Every worker Celery knows or an active run names, by node."""
    found = _celery_workers()
    for run in active_runs().exclude(worker_id="").order_by("worker_id", "pk"):
        node = _node(run.worker_id)
        found.setdefault(node, Worker(node)).runs.append(run)
    return sorted(found.values(), key=lambda worker: worker.node)


def needing_attention(now: datetime | None = None) -> list[Attention]:
    """Stuck runs (silent worker), retrying runs (a fault, no worker), and runs waiting long."""
    now = now or timezone.now()
    silent_since = now - stale_cutoff()
    out = []
    runs = active_runs() | EvaluationRun.objects.filter(state=EvaluationRun.State.QUEUED)
    for run in runs.order_by("pk"):
        if run.worker_id and run.heartbeat_at is not None and run.heartbeat_at < silent_since:
            heard = f"{run.heartbeat_at:%Y-%m-%d %H:%M:%S}"
            out.append(Attention(run, "stuck", f"no heartbeat from {run.worker_id} since {heard}"))
        elif not run.worker_id and run.retry_reason:
            out.append(Attention(run, "retrying", run.retry_reason))
        elif not run.worker_id and (since := _waiting_since(run)) and since < now - WAITING_LONG:
            stage = run.stage or EvaluationRun.State.BUILDING
            reason = f"in the {stage} queue since {since:%Y-%m-%d %H:%M:%S}"
            out.append(Attention(run, "waiting", reason))
    return out


def _waiting_since(run: EvaluationRun) -> datetime | None:
    """Since when an unowned run waits in a queue: handed over (its stage entered), or created
    (or re-run: its last re-run action) and never started since; None for a re-queued run (the
    time is not kept)."""
    if run.state == EvaluationRun.State.QUEUED:
        if run.started_at is not None:
            return None
        rerun = run.actions.filter(kind=RunAction.Kind.RERUN).order_by("-at").first()
        return max(run.created_at, rerun.at) if rerun else run.created_at
    return run.heartbeat_at


def depths() -> dict[str, int] | None:
    """Messages waiting per queue; None when Redis does not answer."""
    try:
        return queue_depths(monitoring_events.events_redis())
    except redis.RedisError as exc:
        logger.warning("operator page: Redis did not answer: %s", exc)
        return None
