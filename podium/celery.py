"""The Celery app: queues, routing by task-name prefix, reliability settings, beat schedule.

Queues: ``build`` (load/build and validate an image), ``gpu-<class>`` (run an agent; one per GPU
class in ``PODIUM_GPU_CLASSES``), ``judge`` and ``default`` (aggregation, reveal, housekeeping,
a board's per-slice statistics: ``boards.*``).
A task's name says where it goes: ``build.*`` -> build, ``gpu.*`` -> the queue of its GPU class,
``judge.*`` -> judge, anything else -> default. In Redis every queue, and every other key of the
broker and the results, begins with the install's prefix (``podium.install``, set in
``podium/settings.py``): another install's workers on the same Redis database never see them.
"""

from __future__ import annotations

import os
from typing import Any

from celery import Celery
from django.conf import settings
from kombu import Queue

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "podium.settings")

app = Celery("podium", include=["leaderboard.pipeline.stage_tasks"])
app.config_from_object("django.conf:settings", namespace="CELERY")

BUILD_QUEUE = "build"
JUDGE_QUEUE = "judge"
DEFAULT_QUEUE = "default"


def gpu_queue(gpu_class: str | None = None) -> str:
    """The queue of one GPU class, e.g. ``gpu-l40s``; the default class when none is given."""
    return f"gpu-{gpu_class or settings.PODIUM_DEFAULT_GPU_CLASS}"


def queue_for(task_name: str, gpu_class: str | None = None) -> str:
    """The queue a task goes to, from its name prefix (and its GPU class for ``gpu.*``)."""
    prefix = task_name.split(".", 1)[0]
    if prefix == "gpu":
        return gpu_queue(gpu_class)
    return {"build": BUILD_QUEUE, "judge": JUDGE_QUEUE}.get(prefix, DEFAULT_QUEUE)


def route_task(
    name: str, args: Any, kwargs: Any, options: Any, task: Any = None, **kw: Any
) -> dict[str, Any]:
    """Celery router; a caller's explicit ``queue=`` (e.g. another GPU class) still wins."""
    return {"queue": queue_for(name, (kwargs or {}).get("gpu_class"))}


def _queues() -> list[Queue]:
    names = [BUILD_QUEUE, JUDGE_QUEUE, DEFAULT_QUEUE]
    names += [gpu_queue(c) for c in settings.PODIUM_GPU_CLASSES]
    return [Queue(n, routing_key=n) for n in names]


app.conf.update(
    task_queues=_queues(),
    task_default_queue=DEFAULT_QUEUE,
    task_routes=(route_task,),
    # A task is acknowledged when it finishes; a lost worker's task goes back to the queue.
    task_acks_late=True,
    task_reject_on_worker_lost=True,
    worker_prefetch_multiplier=1,
    task_serializer="json",
    accept_content=["json"],
    result_expires=7 * 24 * 3600,
    broker_connection_retry_on_startup=True,
    # Django's LOGGING (podium/logs.py) writes the worker's lines too, JSON with the run id.
    worker_hijack_root_logger=False,
    beat_schedule={
        "reap-stale-runs": {
            "task": "housekeeping.reap_stale_runs",
            "schedule": float(settings.PODIUM_REAPER_INTERVAL_S),
        },
        "sweep-image-archives": {
            "task": "housekeeping.sweep_image_archives",
            "schedule": float(settings.PODIUM_IMAGE_STORE_SWEEP_S),
        },
    },
)
app.autodiscover_tasks()
