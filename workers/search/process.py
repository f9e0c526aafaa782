"""The search service in its own process, with its own memory and CPU limits.

Everything an agent sends to ``search.sock`` (bodies, images to decode, queries to encode) is
handled by this process, never by the runner: a hostile agent can use up at most this process's
limits, and the runner and the other runs on the host keep their memory and their speed.

- ``SearchProcess(spec)`` starts ``python -m workers.search.process``; it loads the engine once
  (encoders, indexes: seconds) and then serves any number of runs, one ``search.sock`` each
  (``serve``), each with the per-run caps of ``workers.search.service``.
- Limits (``workers.limits.SearchLimits``, from the environment by default): data memory at most
  ``PODIUM_SEARCH_MEMORY_BYTES`` (``RLIMIT_DATA``: malloc fails past it, the search is
  answered 500 and the process goes on); CPU: a quota of ``PODIUM_SEARCH_CPUS`` CPUs
  (``workers.cpu_quota``, a cgroup; niceness alone where none can be made), niceness
  ``PODIUM_SEARCH_NICE`` (agents come first), single-threaded maths (``OMP_NUM_THREADS=1``).
- Control: one JSON line per command on the child's stdin, one JSON line back (``{"ok": ...}``
  or ``{"error": str}``) on a private copy of its stdout (libraries that print get stderr).
  When the parent goes, stdin closes and the child exits.
"""

from __future__ import annotations

import json
import logging
import os
import resource
import select
import subprocess
import sys
import threading
import time
from dataclasses import asdict
from pathlib import Path
from typing import IO, Any

from PIL import Image

from workers.cpu_quota import CpuQuota
from workers.limits import SearchLimits
from workers.outcomes import SearchUnavailable
from workers.search.corpus import CorpusError
from workers.search.engine import EngineSpec, SearchEngine
from workers.search.rag import rag_context
from workers.search.service import SearchService, start_search_service

log = logging.getLogger(__name__)

STATUS_WAIT_S = 1.0  # for a dying process's exit status (``stopped``)
SERVE_TIMEOUT_S = 600.0  # the first serve loads encoders and builds or reads indexes
COMMAND_TIMEOUT_S = 30.0
_ROOT = Path(__file__).resolve().parents[2]
_SINGLE_THREADED = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


class SearchSocket:
    """One run's ``search.sock`` served by a ``SearchProcess``."""

    def __init__(self, process: SearchProcess, socket_path: Path) -> None:
        self.process = process
        self.socket_path = socket_path

    def allow(
        self, searches: int | None, candidates: dict[str, list[tuple[str, str]]] | None = None
    ) -> None:
        """From now on (a new batch), at most ``searches`` requests (None: no limit), and only
        ``candidates`` (item id -> ``(image id, file)``) to search among."""
        self.process.call(
            {
                "op": "allow",
                "socket": str(self.socket_path),
                "searches": searches,
                "candidates": candidates or {},
            }
        )

    def close(self) -> None:
        if self.process.alive:
            self.process.call({"op": "close", "socket": str(self.socket_path)})
        self.socket_path.unlink(missing_ok=True)

    def __enter__(self) -> SearchSocket:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class SearchProcess:
    """A search engine loaded in a child process, serving runs' sockets until ``close()``."""

    def __init__(self, spec: EngineSpec, limits: SearchLimits | None = None) -> None:
        self.spec = spec
        self.limits = limits or SearchLimits.from_environment()
        env = dict(os.environ, **{name: "1" for name in _SINGLE_THREADED})
        env["TOKENIZERS_PARALLELISM"] = "false"
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(_ROOT), env.get("PYTHONPATH")]))
        self._child = subprocess.Popen(
            [sys.executable, "-m", "workers.search.process"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            close_fds=True,
        )
        self._lock = threading.Lock()
        self._pending = b""
        assert self._child.stdin is not None and self._child.stdout is not None
        self._stdin: IO[bytes] = self._child.stdin
        self._stdout_fd = self._child.stdout.fileno()
        self.cpu_quota = CpuQuota.apply(self._child.pid, self.limits.cpus)
        self._send({"spec": spec.to_json(), "limits": asdict(self.limits)})

    @property
    def pid(self) -> int:
        return self._child.pid

    @property
    def alive(self) -> bool:
        return self._child.poll() is None

    def serve(self, socket_path: Path | str, task: str) -> SearchSocket:
        """Serve ``task``'s searches on ``socket_path`` (waits for the engine the first time)."""
        path = Path(socket_path)
        self.call({"op": "serve", "socket": str(path), "task": task}, SERVE_TIMEOUT_S)
        return SearchSocket(self, path)

    def embed_candidates(self, files: list[str]) -> int:
        """Have a run's candidate image files embedded before its agent starts (from the disk
        cache where it has them); how many were encoded now."""
        count = self.call({"op": "embed", "files": files}, SERVE_TIMEOUT_S)
        assert isinstance(count, int)
        return count

    def rag_context(self, query: str, image_path: str | None, task: str) -> str:
        """Kit B's ``rag_context`` for one turn (``workers.search.rag``)."""
        context = self.call({"op": "rag", "query": query, "image": image_path, "task": task})
        assert isinstance(context, str)
        return context

    def call(self, command: dict[str, object], timeout_s: float = COMMAND_TIMEOUT_S) -> object:
        with self._lock:
            if not self.alive:
                raise SearchUnavailable(self.stopped())
            self._send(command)
            reply = self._reply(time.monotonic() + timeout_s, str(command.get("op")))
        if "error" in reply:
            raise SearchUnavailable(f"search process: {reply['error']}")
        return reply.get("ok")

    def close(self) -> None:
        with self._lock:
            if self._child.poll() is None:
                self._stdin.close()  # the child exits at end of input
                try:
                    self._child.wait(10)
                except subprocess.TimeoutExpired:
                    self._child.kill()
                    self._child.wait()
            if self._child.stdout is not None:
                self._child.stdout.close()
            if self.cpu_quota is not None:
                self.cpu_quota.remove()
                self.cpu_quota = None

    def __enter__(self) -> SearchProcess:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _send(self, message: dict[str, object]) -> None:
        try:
            self._stdin.write(json.dumps(message).encode() + b"\n")
            self._stdin.flush()
        except (BrokenPipeError, ValueError):
            raise SearchUnavailable(self.stopped()) from None

    def _reply(self, deadline: float, op: str) -> dict[str, object]:
        while b"\n" not in self._pending:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self._child.kill()
                raise SearchUnavailable(f"search process: no answer to {op!r} in time; killed")
            readable, _, _ = select.select([self._stdout_fd], [], [], remaining)
            if readable:
                data = os.read(self._stdout_fd, 65536)
                if not data:
                    self._child.wait()
                    raise SearchUnavailable(self.stopped())
                self._pending += data
        line, _, self._pending = self._pending.partition(b"\n")
        reply = json.loads(line)
        assert isinstance(reply, dict)
        return reply

    def stopped(self) -> str:
        """Why the process is gone, for a reason. Its pipes close as it dies, a moment before
        its exit status can be read: wait that moment (briefly) for it."""
        try:
            code: int | None = self._child.wait(timeout=STATUS_WAIT_S)
        except subprocess.TimeoutExpired:
            code = None
        how = f"killed by signal {-code}" if code is not None and code < 0 else f"exit {code}"
        return f"the search process stopped ({how})"


# -- the child ---------------------------------------------------------------------------------


class _Commands:
    """What the child does for each control line; the sockets it serves, by path."""

    def __init__(self, engine: SearchEngine) -> None:
        self.engine = engine
        self.sockets: dict[str, SearchService] = {}

    def run(self, command: dict[str, Any]) -> dict[str, object]:
        try:
            return {"ok": self._run(command)}
        except MemoryError:
            limit = "PODIUM_SEARCH_MEMORY_BYTES"
            return {"error": f"{command.get('op')}: out of memory (over its {limit})"}
        except (CorpusError, ValueError, OSError, KeyError) as exc:
            return {"error": f"{command.get('op')}: {exc}"}

    def _run(self, command: dict[str, Any]) -> object:
        op, path = command["op"], str(command.get("socket"))
        if op == "serve":
            if path in self.sockets:
                raise ValueError(f"{path} is already served")
            self.engine.prepare(command["task"])
            self.sockets[path] = start_search_service(self.engine, path, command["task"])
        elif op == "allow":
            candidates = {
                item: [(image, file) for image, file in files]
                for item, files in command.get("candidates", {}).items()
            }
            self.sockets[path].allow(command["searches"], candidates)
        elif op == "embed":
            return self.engine.candidates.embed(command["files"])
        elif op == "close":
            service = self.sockets.pop(path, None)
            if service is not None:
                service.close()
        elif op == "rag":
            return self._rag(command["query"], command["image"], command["task"])
        elif op != "ping":
            raise ValueError(f"unknown command {op!r}")
        return None

    def _rag(self, query: str, image_path: str | None, task: str) -> str:
        if image_path is None:
            return rag_context(self.engine, query, None, task)
        with Image.open(image_path) as image:
            return rag_context(self.engine, query, image, task)

    def close(self) -> None:
        for service in self.sockets.values():
            service.close()


def apply_own_limits(limits: SearchLimits) -> None:
    """What the search process sets on itself: its data memory and niceness (the CPU quota is
    set by the parent, single-threaded maths by its environment)."""
    resource.setrlimit(resource.RLIMIT_DATA, (limits.memory_bytes, limits.memory_bytes))
    os.nice(limits.nice)


def _child_main() -> int:
    replies = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)  # what libraries print goes to stderr, never into the replies
    logging.basicConfig(level=logging.WARNING, format="search process: %(message)s")
    setup = json.loads(sys.stdin.buffer.readline() or b"null")
    if setup is None:
        return 0
    apply_own_limits(SearchLimits(**setup["limits"]))
    commands = _Commands(SearchEngine.from_spec(EngineSpec(**setup["spec"])))
    try:
        for line in sys.stdin.buffer:
            replies.write(json.dumps(commands.run(json.loads(line))).encode() + b"\n")
    finally:
        commands.close()
    return 0


if __name__ == "__main__":
    sys.exit(_child_main())
