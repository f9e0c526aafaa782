"""A fault scenario (``python -m tests.faults.scenario``) run as a process group of its own,
and the group ended whatever happens, for ``tests/faults`` and ``bench/faults.py``.

The scenario starts private servers (PostgreSQL, ``redis-server``, a Celery worker and its agent
containers); killing only the scenario process once left them all running. Here:

- it starts in a session of its own (``start_new_session``), every server it starts a child in
  its process group (``tests/faults/services.py``), its temporary files under a directory of
  this run (``TMPDIR``), its worker under a node id of this run (``PODIUM_NODE_ID``), so the
  agent containers it leaves are known by their ``podium.node`` label;
- it says each move on stderr (``scenario.say``); it is ended when it falls silent for longer
  than its own waits allow (``scenario.stall_s``, plus ``MARGIN_S``), never by a wall-clock
  limit, so a loaded machine makes it slower, not failed;
- ended, or finished, or this process interrupted (an exception, Ctrl-C): SIGTERM to the
  scenario (it unwinds, stopping its servers), then after ``scenario.GRACE_S`` SIGKILL to its
  whole group; its containers and directory removed. Should this process die without unwinding
  (SIGKILL), the scenario receives SIGTERM (its parent-death signal) and does the same.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from contextlib import suppress
from pathlib import Path

from tests.faults import scenario

REPO = Path(__file__).resolve().parents[2]
MARGIN_S = 60  # beyond the scenario's own stall limit: the steps outside its waits (initdb)


class Stalled(Exception):
    """The scenario said nothing for too long and was ended. ``marker`` and ``group``: what
    ``left_behind`` looks for; ``running``: its processes (pid, command) when it was ended."""

    def __init__(self, message: str, marker: str, group: int, running: list[tuple[int, str]]):
        super().__init__(message)
        self.marker, self.group, self.running = marker, group, running


class Failed(Exception):
    """The scenario exited with an error (its stderr's tail in the message)."""


def run(fault: str, *options: str, silent_s: float | None = None) -> dict:
    """The scenario's report. ``silent_s``: how long it may say nothing before it is ended
    (default: its own stall limit plus ``MARGIN_S``)."""
    if silent_s is None:
        silent_s = scenario.stall_s(scenario.parse([fault, *options])) + MARGIN_S
    scratch = Path(tempfile.mkdtemp(prefix="podium-faults-run-"))
    scratch.chmod(0o755)  # PostgreSQL's directory inside it belongs to ``postgres``
    marker = f"TMPDIR={scratch}"
    node = f"faults-{secrets.token_hex(4)}"
    env = {**os.environ, "TMPDIR": str(scratch), "PODIUM_NODE_ID": node, "PYTHONUNBUFFERED": "1"}
    out, err = scratch / "scenario.out", scratch / "scenario.err"
    command = [sys.executable, "-m", "tests.faults.scenario", fault, *options]
    with out.open("wb") as stdout, err.open("wb") as stderr:
        process = subprocess.Popen(
            command, cwd=REPO, env=env, stdout=stdout, stderr=stderr, start_new_session=True
        )
    try:
        stalled = _silent(process, err, silent_s)
        if stalled:
            running = left_behind(marker, process.pid)
            raise Stalled(f"{fault}: {stalled}\n{_tail(err)}", marker, process.pid, running)
        if process.returncode:
            raise Failed(f"{fault}: exit status {process.returncode}\n{_tail(err)}")
        return dict(json.loads(out.read_text().strip().splitlines()[-1]))
    finally:
        end(process, marker)
        _remove_containers(node)
        shutil.rmtree(scratch, ignore_errors=True)


def _silent(process: subprocess.Popen[bytes], said: Path, silent_s: float) -> str:
    """Until the process exits (""), or says nothing on ``said`` for ``silent_s`` (why)."""
    size, moved_at = 0, time.monotonic()
    while process.poll() is None:
        time.sleep(0.5)
        now = said.stat().st_size
        if now != size:
            size, moved_at = now, time.monotonic()
        elif time.monotonic() - moved_at > silent_s:
            return f"ended after {silent_s:.0f} s without a word"
    return ""


def end(process: subprocess.Popen[bytes], marker: str) -> None:
    """SIGTERM to the scenario, then SIGKILL to its group once it exited or ``GRACE_S`` later
    (what it left of its group, or all of it)."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        with suppress(subprocess.TimeoutExpired):
            process.wait(timeout=scenario.GRACE_S)
    with suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    deadline = time.monotonic() + 30
    while left_behind(marker, process.pid) and time.monotonic() < deadline:  # not instant
        time.sleep(0.1)


def left_behind(marker: str, group: int) -> list[tuple[int, str]]:
    """Every live process of the scenario's: in its process ``group``, or with ``marker`` (this
    run's ``TMPDIR=...``) in its environment, inherited by whatever the scenario started
    whichever group it went to (``redis-server`` writes its title over its environment, but
    stays in the group): (pid, command), zombies left out."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            environ = (entry / "environ").read_bytes().split(b"\0")
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        state, _, pgrp = stat[stat.rindex(")") + 2 :].split()[:3]
        if state != "Z" and (int(pgrp) == group or marker.encode() in environ):
            found.append((int(entry.name), command.strip()))
    return found


def _remove_containers(node: str) -> None:
    """The agent containers and volumes the scenario's worker left (killed, it removes none)."""
    import docker

    from workers.janitor import listed_containers
    from workers.sandbox import LABEL_NODE

    try:
        engine = docker.from_env()
    except docker.errors.DockerException:  # no engine: the scenario started no container
        return
    wanted = {"label": f"{LABEL_NODE}={node}"}
    try:
        for container in listed_containers(engine, wanted):
            with suppress(docker.errors.NotFound):
                engine.api.remove_container(container.id, force=True)
        for volume in engine.volumes.list(filters=wanted):
            with suppress(docker.errors.NotFound):
                volume.remove(force=True)
    finally:
        engine.close()


def _tail(path: Path) -> str:
    return path.read_text(errors="replace")[-5000:] if path.exists() else ""
