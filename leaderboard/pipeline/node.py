"""This worker's node: its janitor, started with the worker and run every interval.

A node is one Docker engine (the worker's ``DOCKER_HOST``) with its cache directory; its id is
``PODIUM_NODE_ID`` (the host name by default). The janitor (``workers/janitor.py``) keeps the
containers and volumes of a worker that holds an active run (it is working on it, or it died
and the reaper has not re-queued the run yet: the next sweep removes them) and removes the
node's others of this site (``site``): those of a worker that died mid-run, once its run went
elsewhere. Its exporter (``start_exporter``, every ``EXPORT_POLL_S``, at the lowest CPU
priority) stores the agent images the node owes (``image_store.export_owed``): at once those
another node waits for, the others only while no timed run is on the node. Workers of the GPU
queues announce their node in Redis (``announce``), so ``auto`` mode knows how many nodes serve
runs (``serving_nodes``).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Iterable

import docker
import docker.errors
import redis
import requests.exceptions
from django.conf import settings
from django.db import DatabaseError, connections
from django.db.models import Q

from leaderboard.models import EvaluationRun
from leaderboard.pipeline import image_store
from podium.celery import BUILD_QUEUE
from podium.install import key
from podium.monitoring_events import events_redis
from workers.janitor import Swept, sweep

logger = logging.getLogger("podium.pipeline")
EXPORT_POLL_S = 2.0  # how often the exporter looks for archives owed
NODE_SEEN_S = 60.0  # a node not announced for this long no longer counts


def site() -> str:
    """This installation, as its containers are labelled: its id (``podium.install``; its runs
    decide which containers are orphans; another installation's are never)."""
    return str(settings.PODIUM_INSTALL_ID)


def nodes_key() -> str:
    """The Redis hash: node -> when one of its GPU workers last announced it."""
    return key("nodes:gpu")


def holds_a_run(worker: str) -> bool:
    """Whether ``worker`` (a ``ownership.worker_id``) holds an active run."""
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
    return any(queue == BUILD_QUEUE or serves_runs([queue]) for queue in queues)


def serves_runs(queues: Iterable[str]) -> bool:
    """Whether a worker consuming ``queues`` runs agents (a GPU queue)."""
    return any(queue.startswith("gpu-") for queue in queues)  # podium.celery.gpu_queue


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


def timed_run_here(serves: bool) -> bool:
    """Whether an agent is being timed on this node or (``serves``: the node runs agents) a
    run waits for a GPU worker: it may start here at any moment."""
    here = Q(worker_id__startswith=f"{settings.PODIUM_NODE_ID}/")
    if serves:
        here |= Q(worker_id="")
    return EvaluationRun.objects.filter(here, state=EvaluationRun.State.RUNNING).exists()


def announce() -> None:
    """This node serves runs, as of now (``serving_nodes``)."""
    events_redis().hset(nodes_key(), settings.PODIUM_NODE_ID, str(time.time()))


def serving_nodes() -> set[str]:
    """The nodes whose GPU workers announced themselves within ``NODE_SEEN_S``."""
    seen = events_redis().hgetall(nodes_key())
    cutoff = time.time() - NODE_SEEN_S
    return {
        node.decode() if isinstance(node, bytes) else node  # bytes: no decode_responses
        for node, at in seen.items()
        if float(at) >= cutoff
    }


def ahead_now() -> bool:
    """Whether this node stores the images it owes before anyone asks (``PODIUM_IMAGE_STORE``):
    ``always``: yes; ``auto``: while another node serves runs (it would wait for them) and no
    agent is timed here; ``never``: no. When Redis cannot say, as if another node served runs."""
    mode = settings.PODIUM_IMAGE_STORE
    if mode != "auto":
        return mode == "always"
    me = settings.PODIUM_NODE_ID
    try:
        nodes = serving_nodes()
    except redis.RedisError:
        return not timed_run_here(serves=True)
    return bool(nodes - {me}) and not timed_run_here(serves=me in nodes)


def export_pass(serves: bool) -> list[str]:
    """One pass of this node's exporter (``serves``: this worker runs agents; it announces
    the node first)."""
    if serves:
        announce()
    client = docker.from_env()
    try:
        return image_store.export_owed(client, ahead=ahead_now)
    finally:
        client.close()


def _export_quietly(serves: bool) -> None:
    try:
        export_pass(serves)
    except Exception as exc:  # the engine, the database, Redis or storage: next pass
        logger.warning("exporter on node %s: %r", settings.PODIUM_NODE_ID, exc)
        connections.close_all()


def start_exporter(serves: bool, stop: threading.Event | None = None) -> threading.Thread | None:
    """Every ``EXPORT_POLL_S``, this node's archives owed exported, from a daemon thread at the
    lowest CPU priority (until ``stop`` is set); none in ``never`` mode."""
    if settings.PODIUM_IMAGE_STORE == "never":
        return None
    stop = stop or threading.Event()

    def loop() -> None:
        try:  # this thread only: its sha256 and uploads yield to the agents' CPU
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
        except OSError as exc:
            logger.info("exporter: priority unchanged (%s)", exc)
        while not stop.wait(EXPORT_POLL_S):
            _export_quietly(serves)

    thread = threading.Thread(target=loop, name="podium-image-exporter", daemon=True)
    thread.start()
    return thread
