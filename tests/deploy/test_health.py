"""The probes: /healthz and /readyz (podium.health.ProbeMiddleware) and
``python -m podium.health``, against the test database and Redis."""

from __future__ import annotations

import logging
import os
import subprocess
import sys

import pytest
from django.db import connection

from tests.deploy.render import REPO
from tests.services import redis_url

CLOSED = "redis://127.0.0.1:1/0"  # nothing listens on port 1


@pytest.fixture
def broker(settings) -> str:
    settings.CELERY_BROKER_URL = redis_url("e2e")
    return settings.CELERY_BROKER_URL


def test_liveness_answers_any_host(client):
    response = client.get("/healthz", HTTP_HOST="10.1.2.3:8000")
    assert response.status_code == 200 and response.json() == {"alive": True}
    assert "no-store" in response["Cache-Control"]
    assert client.get("/", HTTP_HOST="10.1.2.3:8000").status_code == 400  # pages still check


@pytest.mark.django_db
def test_ready_when_database_and_broker_answer(client, broker):
    response = client.get("/readyz", HTTP_HOST="10.1.2.3:8000")
    assert response.status_code == 200
    assert response.json() == {"ready": True, "problems": []}


@pytest.mark.django_db
def test_not_ready_without_the_broker(client, settings, caplog, monkeypatch):
    monkeypatch.setattr(logging.getLogger("podium"), "propagate", True)  # to caplog
    settings.CELERY_BROKER_URL = CLOSED
    response = client.get("/readyz")
    assert response.status_code == 503
    assert response.json()["problems"] == ["broker"]  # the error itself only in the log
    assert "broker: ConnectionError" in caplog.text


def test_other_methods_are_not_probes(client):
    assert client.post("/healthz").status_code == 404


def _probe(*args: str, redis: str) -> subprocess.CompletedProcess:
    db = connection.settings_dict
    env = {
        **os.environ,
        "DATABASE_URL": f"postgres://{db['USER'] or 'postgres'}@{db['HOST'] or '127.0.0.1'}:"
        f"{db['PORT'] or 5432}/{db['NAME']}",
        "REDIS_URL": redis,
    }
    return subprocess.run(
        [sys.executable, "-m", "podium.health", *args],
        capture_output=True, text=True, timeout=60, cwd=REPO, env=env,
    )  # fmt: skip


@pytest.mark.django_db
def test_the_beat_probe_needs_the_broker():
    assert _probe("beat", redis=redis_url("e2e")).returncode == 0
    down = _probe("beat", redis=CLOSED)
    assert down.returncode == 1 and "podium.health beat: broker: ConnectionError" in down.stderr


@pytest.mark.django_db
def test_the_worker_probe_needs_its_worker_to_answer():
    done = _probe("worker", "celery@nobody-here", redis=redis_url("e2e"))
    assert done.returncode == 1
    assert "worker celery@nobody-here did not answer a ping" in done.stderr


def test_a_bad_role_is_refused():
    done = _probe("web", redis=CLOSED)
    assert done.returncode == 2 and "invalid choice: 'web'" in done.stderr
