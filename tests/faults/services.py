"""Private copies of the services Podium depends on, each stopped and started again by a fault
test: PostgreSQL (its own cluster: initdb + pg_ctl, never the machine's server), Redis (its own
``redis-server``, no persistence, so a restart loses its data) and the stand-in judge
(``tests/fake_openai.py``); the S3 server is SeaweedFS's (``tests/seaweedfs.py``), killed and
started again.

Every service listens on 127.0.0.1 and a port of its own; ``stop`` makes it unreachable
(connections refused) and ``start`` brings it back on the same port. PostgreSQL and the S3
server keep their data across the outage; Redis does not (as a Redis without persistence).

Every server process is a child of the scenario, in its process group (PostgreSQL's
``postgres`` started directly, not by ``pg_ctl``, which detaches it into a session of its own):
ending the group ends them all (``tests/faults/process.py``).
"""

from __future__ import annotations

import glob
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Protocol, TypedDict

from tests.fake_openai import FakeOpenAI


class Service(Protocol):
    name: str

    def start(self) -> None: ...

    def stop(self) -> None: ...


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_listening(port: int, timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"nothing listens on 127.0.0.1:{port}") from None
            time.sleep(0.05)


def _pg_bin(name: str) -> str:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    if not found:
        raise RuntimeError(f"no PostgreSQL server binaries ({name}) under /usr/lib/postgresql")
    return found[-1]


class _RunAs(TypedDict):
    user: str | None
    group: str | None
    extra_groups: list[str] | None


class Postgres:
    """A PostgreSQL cluster of its own in a temporary directory (run as the ``postgres`` user
    when root), trusting loopback connections; ``url(database)`` for Django."""

    name = "postgres"

    def __init__(self, port: int | None = None) -> None:
        self.port = port or free_port()
        self.root = Path(tempfile.mkdtemp(prefix="podium-faults-pg-"))
        self.data = self.root / "data"
        self._process: subprocess.Popen[bytes] | None = None
        # PostgreSQL refuses to run as root: its programs run as ``postgres`` then
        self._user = "postgres" if os.geteuid() == 0 else None
        if self._user:
            shutil.chown(self.root, self._user, self._user)
        self._run(_pg_bin("initdb"), "-D", str(self.data), "-U", "postgres", "--auth=trust",
                  "--no-sync")  # fmt: skip

    def _as(self) -> _RunAs:
        return {"user": self._user, "group": self._user, "extra_groups": [] if self._user else None}

    def _run(self, *command: str) -> None:
        done = subprocess.run(command, capture_output=True, cwd=self.root, **self._as())
        if done.returncode:
            error = (done.stderr or done.stdout).decode(errors="replace")[-2000:]
            raise RuntimeError(f"{Path(command[0]).name} failed: {error}")

    def url(self, database: str) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{database}"

    def start(self) -> None:
        command = [
            _pg_bin("postgres"), "-D", str(self.data), "-p", str(self.port), "-k", str(self.root),
            "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off",
        ]  # fmt: skip
        with (self.root / "server.log").open("ab") as log:
            self._process = subprocess.Popen(
                command, cwd=self.root, stdout=log, stderr=subprocess.STDOUT, **self._as()
            )
        ready = [_pg_bin("pg_isready"), "-q", "-h", "127.0.0.1", "-p", str(self.port)]
        while subprocess.run(ready).returncode != 0:  # until it accepts connections
            if self._process.poll() is not None:
                log_tail = (self.root / "server.log").read_text(errors="replace")[-2000:]
                raise RuntimeError(f"postgres exited: {log_tail}")
            time.sleep(0.1)

    def stop(self) -> None:  # "fast" (SIGINT): open connections are cut, as in a restart
        if self._process is not None and self._process.poll() is None:
            self._process.send_signal(signal.SIGINT)
            self._process.wait()
        self._process = None

    def create_database(self, name: str) -> None:
        self._run(
            _pg_bin("createdb"), "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", name
        )

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)


class Redis:
    """A ``redis-server`` of its own; with no persistence, a restart starts it empty."""

    name = "redis"

    def __init__(self, port: int | None = None) -> None:
        self.port = port or free_port()
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        command = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1",
                   "--save", "", "--appendonly", "no"]  # fmt: skip
        self._process = subprocess.Popen(command, stdout=subprocess.DEVNULL)
        wait_listening(self.port)

    def stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            self._process.wait(timeout=30)
        self._process = None

    close = stop


class Judge:
    """The stand-in judge (an OpenAI-compatible HTTP server) answering ``reply`` to all."""

    name = "judge"

    def __init__(self, reply: str = "CORRECT", port: int | None = None) -> None:
        self.reply, self.port = reply, port or free_port()
        self._server: FakeOpenAI | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> None:
        self._server = FakeOpenAI(reply=self.reply, port=self.port).start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()
        self._server = None

    close = stop
