"""This worker's node: its janitor, started with the worker and run every interval.

A node is one Docker engine (the worker's ``DOCKER_HOST``) with its cache directory; its id is
``PODIUM_NODE_ID`` (the host name by default). The janitor (``workers/janitor.py``) keeps the
containers and volumes of a worker that holds an active run (it is working on it, or it died
and the reaper has not re-queued the run yet: the next sweep removes them) and removes the
node's others of this site (``site``): those of a worker that died mid-run, once its run went
elsewhere.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Iterable

import docker
import docker.errors
import requests.exceptions
from django.conf import settings
from django.db import DatabaseError, connections

from leaderboard.models import EvaluationRun
from podium.celery import BUILD_QUEUE
from workers.janitor import Swept, sweep

logger = logging.getLogger("podium.pipeline")


def site() -> str:
    """This installation, as its containers are labelled: a digest of where its database is
    (its runs decide which containers are orphans; another installation's are never)."""
    db = connections["default"].settings_dict
    where = f"{db.get('ENGINE')}|{db.get('HOST')}|{db.get('PORT')}|{db.get('NAME')}"
    return hashlib.sha256(where.encode()).hexdigest()[:16]


def holds_a_run(worker: str) -> bool:
    """Whether ``worker`` (a ``claims.worker_id``) holds an active run."""
    active = EvaluationRun.objects.filter(state__in=EvaluationRun.ACTIVE_STATES)
    return bool(worker) and active.filter(worker_id=worker).exists()


def sweep_node() -> Swept:
    """One pass of this node's janitor over its engine."""
    client = docker.from_env()
    try:
        return sweep(client, site(), settings.PODIUM_NODE_ID, holds_a_run)
    finally:
        client.close()


def _sweep_quietly() -> None:
    node = settings.PODIUM_NODE_ID
    try:
        sweep_node()
    except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
        logger.warning("janitor on node %s: the engine did not answer (%s)", node, exc)
    except DatabaseError as exc:
        logger.warning("janitor on node %s: the database did not answer (%s)", node, exc)
    finally:
        connections.close_all()


def runs_containers(queues: Iterable[str]) -> bool:
    """Whether a worker consuming ``queues`` starts containers on its node's engine (the build
    queue and the GPU queues); the others (judge, default) need no engine and no janitor."""
    return any(queue == BUILD_QUEUE or queue.startswith("gpu-") for queue in queues)  # gpu_queue


def start_janitor(stop: threading.Event | None = None) -> threading.Thread:
    """Sweep now, then every ``PODIUM_JANITOR_INTERVAL_S``, from a daemon thread (until
    ``stop`` is set)."""
    stop = stop or threading.Event()
    interval = float(settings.PODIUM_JANITOR_INTERVAL_S)

    def loop() -> None:
        _sweep_quietly()
        while not stop.wait(interval):
            _sweep_quietly()

    thread = threading.Thread(target=loop, name="podium-janitor", daemon=True)
    thread.start()
    return thread
