"""Gunicorn on loopback for the benchmarks (DEBUG off), started and waited for."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]


def start_gunicorn(
    env: dict[str, str], port: int, *, workers: int = 1, ready_path: str = "/",
    extra_args: Sequence[str] = (),
) -> subprocess.Popen:  # fmt: skip
    """Serve ``podium.wsgi`` on 127.0.0.1:``port``; returns once ``ready_path`` answers 200."""
    server = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "podium.wsgi", f"--bind=127.0.0.1:{port}",
         f"--workers={workers}", "--log-level=warning", *extra_args],
        cwd=ROOT, env=env,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}{ready_path}", timeout=2).status_code == 200:
                return server
        except httpx.TransportError:
            time.sleep(0.3)
    server.terminate()
    raise RuntimeError("gunicorn did not answer within 60 s")
