"""Two Podium installs on one Redis database (issue 36, part 3): the idle install's worker never
takes the other's messages, their own keys (GPU nodes, metrics, judge slots) do not mix, and the
install id is stable for one database and differs for two (``podium/install.py``).

The Celery test runs real ``celery worker`` processes on a ``redis-server`` of its own: install
A is this test process and its worker (the test database), install B an idle worker on another
database. Before the namespacing, B's worker took A's message at once."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis
from dj_database_url import parse
from django.core.exceptions import ImproperlyConfigured

from leaderboard.monitoring import queue_depths
from leaderboard.pipeline import node
from podium import monitoring_events
from podium.celery import app
from podium.install import install_id, redis_prefix
from tests.e2e.harness import REPO, _use_broker, database_url
from tests.faults.services import Redis
from tests.leaderboard.broker import broker_at
from tests.services import redis_url

pytestmark = pytest.mark.slow
TASK = "housekeeping.reap_stale_runs"  # any task of the default queue


def _wait(what: str, done: Callable[[], bool], timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while not done():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


class Worker:
    """``celery worker`` on the default queue, as one install."""

    def __init__(self, name: str, log: Path, **env: str) -> None:
        self.log_path = log
        command = [
            sys.executable, "-m", "celery", "-A", "podium", "worker", "--pool=solo",
            "-Q", "default", "-n", f"{name}@%h", "--without-gossip", "--without-mingle",
            "-l", "info",
        ]  # fmt: skip
        environment = {k: v for k, v in os.environ.items() if k != "PODIUM_INSTALL_ID"}
        with log.open("wb") as out:
            self.process = subprocess.Popen(
                command, cwd=REPO, env={**environment, **env}, stdout=out, stderr=subprocess.STDOUT
            )
        try:
            _wait(f"{name}'s worker", lambda: " ready." in self.log(), 60)
        except BaseException:  # never ready: stopped here, not left behind by the test
            self.stop()
            raise

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)


@pytest.fixture
def shared_redis() -> Iterator[str]:
    """A ``redis-server`` of this test's, its database 0 shared by both installs; this test
    process (install A) sends to it."""
    server = Redis()
    server.start()
    previous = app.conf.broker_url
    _use_broker(server.url)
    try:
        yield server.url
    finally:
        _use_broker(previous)
        server.stop()


def test_an_idle_install_on_the_same_redis_database_never_takes_the_others_message(
    transactional_db, shared_redis, settings, tmp_path
):
    other_database = re.sub(r"/[^/]*$", "/podium_another_install", database_url())
    idle = Worker(
        "idle", tmp_path / "idle.log", DATABASE_URL=other_database, REDIS_URL=shared_redis
    )
    owner = None
    try:
        sent = app.send_task(TASK)
        time.sleep(2)  # the idle worker waits on its queues (BRPOP): it would have taken it
        client = redis.Redis.from_url(shared_redis)
        assert queue_depths(client)["default"] == 1, "another install's worker took the message"
        assert sent.id not in idle.log()
        assert "install " in idle.log() and settings.PODIUM_INSTALL_ID not in idle.log()

        owner = Worker(
            "owner",
            tmp_path / "owner.log",
            DATABASE_URL=database_url(),
            REDIS_URL=shared_redis,
            PODIUM_INSTALL_ID=settings.PODIUM_INSTALL_ID,
        )
        _wait("the owner's worker to run it", lambda: f"{TASK}[{sent.id}] succeeded" in owner.log())
        assert queue_depths(client)["default"] == 0
        # the broadcast channels (pidbox) are the install's too: only its own worker answers
        replies = app.control.ping(timeout=1.0)
        assert [name for reply in replies for name in reply] == [f"owner@{socket.gethostname()}"]
        assert sent.id not in idle.log()
        # every key of either install in its own namespace: nothing outside the two
        prefixes = (settings.PODIUM_REDIS_PREFIX, redis_prefix(install_id(parse(other_database))))
        keys = [k.decode() for k in client.keys("*")]
        assert keys and all(k.startswith(prefixes) for k in keys), keys
    finally:
        idle.stop()
        if owner is not None:
            owner.stop()


@pytest.fixture
def events_redis() -> Iterator[redis.Redis]:
    """The broker's Redis (where the events and nodes are kept): a test database, emptied."""
    with broker_at(redis_url("reaper")) as client:
        assert (
            monitoring_events.events_redis().connection_pool.connection_kwargs["db"]
            == (client.connection_pool.connection_kwargs["db"])
        )
        yield client


def _as_install(settings, name: str) -> None:
    settings.PODIUM_INSTALL_ID = f"test-installs-{name}"
    settings.PODIUM_REDIS_PREFIX = f"podium:test-installs-{name}:"


def test_two_installs_gpu_nodes_and_metrics_do_not_mix(events_redis, settings):
    _as_install(settings, "a")
    settings.PODIUM_NODE_ID = "node-of-a"
    node.announce()
    monitoring_events.record(monitoring_events.JUDGE_ERRORS, 3, judge="gpt")
    _as_install(settings, "b")
    assert node.serving_nodes() == set()
    assert monitoring_events.read(monitoring_events.JUDGE_ERRORS, events_redis) == {}
    settings.PODIUM_NODE_ID = "node-of-b"
    node.announce()
    monitoring_events.record(monitoring_events.JUDGE_ERRORS, 1, judge="gpt")
    assert node.serving_nodes() == {"node-of-b"}
    assert monitoring_events.read(monitoring_events.JUDGE_ERRORS, events_redis)[("gpt",)].value == 1
    _as_install(settings, "a")
    assert node.serving_nodes() == {"node-of-a"}
    assert monitoring_events.read(monitoring_events.JUDGE_ERRORS, events_redis)[("gpt",)].value == 3
    assert set(events_redis.keys("podium:test-installs-*")) == {
        f"podium:test-installs-{i}:{name}".encode()
        for i in "ab"
        for name in ("nodes:gpu", "metrics:podium_judge_errors")
    }


def test_the_install_id_is_stable_for_one_database_and_differs_for_two(settings):
    here = {"ENGINE": "django.db.backends.postgresql", "HOST": "db", "PORT": 5432, "NAME": "p"}
    assert install_id(here) == install_id(dict(here)) == install_id({**here, "USER": "other"})
    assert install_id(here) != install_id({**here, "NAME": "p2"})
    assert install_id(here) != install_id({**here, "HOST": "db2"})
    assert re.fullmatch(r"[0-9a-f]{16}", install_id(here))
    assert install_id(here, explicit="staging") == "staging"
    with pytest.raises(ImproperlyConfigured, match="PODIUM_INSTALL_ID='a b'"):
        install_id(here, explicit="a b")
    # the janitor's labels are the install's id: one definition
    assert node.site() == settings.PODIUM_INSTALL_ID
