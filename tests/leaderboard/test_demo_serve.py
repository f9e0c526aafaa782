"""The demo serves first (issue 35): ``manage.py demo`` starts the site as a subprocess before
the base image and the runs, so a newcomer opens it at once. Here the server alone, on the test
database: it answers while its block runs and is gone after."""

from __future__ import annotations

import socket
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from leaderboard.demo.processes import WebServer
from tests.e2e.harness import database_url

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.django_db(transaction=True)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def answer(url: str, within_s: float) -> tuple[int, str]:
    """The first answer at ``url`` within ``within_s`` seconds (a server's start takes a few)."""
    deadline = time.monotonic() + within_s
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode()
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def test_the_demos_web_server_answers_while_its_block_runs(monkeypatch, challenge):
    monkeypatch.setenv("DATABASE_URL", database_url())  # the server reads the test database
    port = free_port()
    with WebServer(REPO, f"127.0.0.1:{port}") as web:
        status, page = answer(f"http://127.0.0.1:{port}/", within_s=120)
        assert web.alive()
    assert status == 200 and challenge.name in page, page[:2000]
    assert not web.alive(), "stopped with its block"
    with pytest.raises(OSError):
        urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5)
