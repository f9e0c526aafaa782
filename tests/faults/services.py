"""Private copies of the services Podium depends on, each stopped and started again by a fault
test: PostgreSQL (its own cluster: initdb + pg_ctl, never the machine's server), Redis (its own
``redis-server``, no persistence, so a restart loses its data) and the stand-in judge
(``tests/fake_openai.py``); the S3 server is SeaweedFS's (``tests/seaweedfs.py``), killed and
started again.

Every service listens on 127.0.0.1 and a port of its own; ``stop`` makes it unreachable
(connections refused) and ``start`` brings it back on the same port. PostgreSQL and the S3
server keep their data across the outage; Redis does not (as a Redis without persistence).
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Protocol

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


class Postgres:
    """A PostgreSQL cluster of its own in a temporary directory (run as the ``postgres`` user
    when root), trusting loopback connections; ``url(database)`` for Django."""

    name = "postgres"

    def __init__(self, port: int | None = None) -> None:
        self.port = port or free_port()
        self.root = Path(tempfile.mkdtemp(prefix="podium-faults-pg-"))
        self.data = self.root / "data"
        self._as = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        if self._as:
            shutil.chown(self.root, "postgres")
        self._run(_pg_bin("initdb"), "-D", str(self.data), "-U", "postgres", "--auth=trust")

    def _run(self, *command: str) -> None:
        done = subprocess.run([*self._as, *command], capture_output=True, cwd=self.root)
        if done.returncode:
            error = (done.stderr or done.stdout).decode(errors="replace")[-2000:]
            raise RuntimeError(f"{Path(command[0]).name} failed: {error}")

    def url(self, database: str) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{database}"

    def start(self) -> None:
        options = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off"
        log = str(self.root / "server.log")
        self._run(_pg_bin("pg_ctl"), "-D", str(self.data), "-o", options, "-l", log, "-w", "start")

    def stop(self) -> None:  # "fast": open connections are cut, as in a restart
        self._run(_pg_bin("pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop")

    def create_database(self, name: str) -> None:
        self._run(
            _pg_bin("createdb"), "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", name
        )

    def close(self) -> None:
        if (self.data / "postmaster.pid").exists():
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
