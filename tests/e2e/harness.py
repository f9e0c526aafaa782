"""What the pipeline's tests share: real Celery worker processes on a Redis database of their
own, the test PostgreSQL database, per-test storage, agents submitted as build contexts.

Import the fixtures into a test module (``from tests.e2e.harness import pipeline``); tests
using them need ``@pytest.mark.django_db(transaction=True)``: the workers are other processes
and only see committed rows.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import kombu.pools
import pytest
import redis
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.urls import reverse

from leaderboard.demo.setup import context_tar
from leaderboard.models import Challenge, EvaluationRun, Membership, Submission, Task, Team
from leaderboard.submitting import Artifact, MethodInfo, evaluated_splits, submit
from podium.celery import app
from tests.services import redis_url
from workers.janitor import listed_containers
from workers.sandbox import LABEL_IMAGE

REPO = Path(__file__).resolve().parents[2]
BROKER = redis_url("e2e")  # tests/services.py: its own database, emptied around each test
ALL_QUEUES = "build,gpu-l40s,judge,default"
LABELS = {
    "domain": "vehicle",
    "query_category": "simple-recognition",
    "dynamism": "static",
    "image_quality": "normal",
}


def write_split(root: Path, conversations: int, turns: int) -> Path:
    """A small split in Podium's format: conversation ``c<i>`` has turns ``c<i>-t<j>``."""
    from PIL import Image

    (root / "images").mkdir(parents=True, exist_ok=True)
    lines = []
    for i in range(conversations):
        image = f"images/c{i}.jpg"
        Image.new("RGB", (32 + i, 24), (30 * i % 256, 90, 150)).save(root / image, "JPEG")
        ids = [f"c{i}-t{j}" for j in range(turns)]
        record = {
            "session_id": f"c{i}",
            "image": image,
            "image_url": None if i % 2 else f"https://example.org/c{i}.jpg",
            "turns": [{"interaction_id": x, "query": f"what is {x}?", **LABELS} for x in ids],
            "answers": [{"interaction_id": x, "ans_full": f"answer {x}"} for x in ids],
        }
        lines.append(json.dumps(record))
    (root / "sessions.jsonl").write_text("\n".join(lines) + "\n")
    return root


def _use_broker(url: str) -> None:
    app.conf.broker_url = url
    kombu.pools.reset()  # connections made for the previous URL, and their pools
    app._pool = None
    app.amqp._producer_pool = None


@contextmanager
def own_broker() -> Iterator[None]:
    """Celery on this test's Redis database (``BROKER``), emptied before and after."""
    previous = app.conf.broker_url
    client = redis.Redis.from_url(BROKER)
    client.flushdb()
    _use_broker(BROKER)
    try:
        yield
    finally:
        client.flushdb()
        _use_broker(previous)


def database_url() -> str:
    """The test database, as a URL for the worker processes."""
    db = connection.settings_dict
    user = db.get("USER") or "postgres"
    host, port = db.get("HOST") or "127.0.0.1", db.get("PORT") or 5432
    return f"postgres://{user}@{host}:{port}/{db['NAME']}"


class Pipeline:
    """Workers as subprocesses of the test, and ways to wait for runs."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.media = tmp / "media"
        self.var = tmp / "var"
        self.env = {
            **os.environ,
            "DATABASE_URL": database_url(),
            "REDIS_URL": BROKER,
            "PODIUM_MEDIA_ROOT": str(self.media),
            "PODIUM_VAR_DIR": str(self.var),
            "PODIUM_RETRY_BACKOFF_S": "1",
            "PODIUM_RETRY_BACKOFF_MAX_S": "2",
            "PYTHONUNBUFFERED": "1",
        }
        self.workers: list[subprocess.Popen] = []

    def start_worker(self, name: str, *, beat: bool = False, **env: str) -> subprocess.Popen:
        """``celery worker`` on every queue, one task at a time in its own process (solo pool,
        so a SIGKILL ends the task with it)."""
        command = [
            sys.executable, "-m", "celery", "-A", "podium", "worker", "--pool=solo",
            "-Q", ALL_QUEUES, "-n", f"{name}@%h", "--without-gossip", "--without-mingle",
            "-l", "info",
        ]  # fmt: skip
        if beat:
            command += ["-B", "-s", str(self.tmp / f"{name}-beat-schedule")]
        log = (self.tmp / f"{name}.log").open("ab")
        worker = subprocess.Popen(
            command, cwd=REPO, env={**self.env, **env}, stdout=log, stderr=subprocess.STDOUT
        )
        self.workers.append(worker)
        return worker

    def log(self, name: str) -> str:
        path = self.tmp / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def stop(self) -> None:
        for worker in self.workers:
            if worker.poll() is None:
                worker.send_signal(signal.SIGTERM)
        for worker in self.workers:
            try:
                worker.wait(timeout=20)
            except subprocess.TimeoutExpired:
                worker.kill()
                worker.wait()

    def wait_for(
        self, what: str, check: Callable[[], bool], timeout_s: float = 240, every_s: float = 0.5
    ) -> None:
        deadline = time.monotonic() + timeout_s
        while not check():
            if time.monotonic() > deadline:
                logs = "\n".join(
                    p.name + ":\n" + p.read_text()[-3000:] for p in self.tmp.glob("*.log")
                )
                pytest.fail(f"timed out waiting for {what}\n{logs}")
            time.sleep(every_s)

    def wait_finished(self, submission: Submission, timeout_s: float = 240) -> list[EvaluationRun]:
        runs = EvaluationRun.objects.filter(submission=submission)
        self.wait_for(
            f"the runs of submission #{submission.pk}",
            lambda: not runs.exclude(state__in=EvaluationRun.TERMINAL_STATES).exists(),
            timeout_s,
        )
        return list(runs.order_by("pk"))


@pytest.fixture
def pipeline(transactional_db, settings, tmp_path) -> Iterator[Pipeline]:
    """Storage, cache and broker for this test; workers are stopped (and the containers of
    killed ones removed) at the end."""
    harness = Pipeline(tmp_path)
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {
            "BACKEND": "django.core.files.storage.FileSystemStorage",
            "OPTIONS": {"location": str(harness.media), "base_url": None},
        },
    }
    settings.VAR_DIR = harness.var
    try:
        with own_broker():
            try:
                yield harness
            finally:
                harness.stop()
    finally:
        _remove_agent_containers(
            list(Submission.objects.exclude(image_digest="").values_list("image_digest", flat=True))
        )


def _remove_agent_containers(images: list[str]) -> None:
    """Containers (and socket volumes) that killed workers left, running this test's images;
    a live worker removes its own, and other tests' containers are not touched."""
    import docker

    try:
        engine = docker.from_env()
    except docker.errors.DockerException:
        return  # no engine: the test started no container
    for image in images:
        wanted = {"label": f"{LABEL_IMAGE}={image}"}
        for container in listed_containers(engine, wanted):
            with suppress(docker.errors.NotFound):
                engine.api.remove_container(container.id, force=True)
        for volume in engine.volumes.list(filters=wanted):
            volume.remove(force=True)
    engine.close()


@pytest.fixture
def team_member(transactional_db) -> tuple[Team, User]:
    user = User.objects.create_user("team-lead", password="pw-secret-123")
    team = Team.objects.create(name="Team Lead")
    Membership.objects.create(team=team, user=user)
    return team, user


def make_task(challenge: Challenge, task_id: str, **fields) -> Task:
    defaults = {
        "name": task_id,
        "readiness_s": 60,
        "per_item_s": 5.0,
        "image_search_enabled": False,
        "web_search_enabled": False,
        "quota_per_day": None,
        "quota_concurrent": None,
    }
    return Task.objects.create(challenge=challenge, task_id=task_id, **(defaults | fields))


def submit_agent(
    team: Team, user: User, challenge: Challenge, agent_dir: Path, method: str
) -> Submission:
    """Submit an agent directory as a build context through the one submit code path."""
    upload = SimpleUploadedFile(f"{method}.tar", context_tar(agent_dir))
    artifact = Artifact(kind=Submission.ArtifactKind.BUILD_CONTEXT, file=upload)
    return submit(team, challenge, user, artifact, MethodInfo(method_name=method))


def submit_through_form(
    client: Any, challenge: Challenge, agents: dict[str, Path], teams: Sequence[Team]
) -> dict[str, Submission]:
    """Each agent directory submitted as a build context through the web form by its team (in
    order), signed in as a member of that team; the submissions by method name."""
    url = reverse("leaderboard:submit", args=[challenge.slug])
    for (method, directory), by in zip(agents.items(), teams, strict=True):
        client.force_login(by.members.first())
        response = client.post(
            url,
            {
                "team": by.pk,
                "artifact_kind": Submission.ArtifactKind.BUILD_CONTEXT,
                "artifact": SimpleUploadedFile(f"{method}.tar", context_tar(directory)),
                "method_name": method,
                "tasks": sorted({split.task.task_id for split in evaluated_splits(challenge)}),
            },
        )
        assert response.status_code == 302, response.content.decode()[:2000]
    submissions = {s.method_name: s for s in Submission.objects.filter(challenge=challenge)}
    assert set(submissions) == set(agents)
    return submissions
