"""The agent's life in the container: loading, then answering batches one at a time.

Both loading and every ``batch_generate_response`` call run on the process's main thread, as in
the official evaluators (libraries that install signal handlers, such as some model servers,
need it); the HTTP server hands the first batch of a connection over from its own thread. The
main thread sends the reply the moment the agent is done, then keeps the connection: it waits
for that connection's next request itself and answers it there, so that a batch wakes one thread
(not a server thread, then the main thread). It gives the connection back to its server thread
when it closes or when another connection hands a batch over.
"""

from __future__ import annotations

import os
import platform
import queue
import select
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import PIL

from agentkit import __version__, deadline
from agentkit.adapters import LoadedAgent, kit_entry_point, load_agent
from agentkit.batch import BatchRequest
from agentkit.protocol import PROTOCOL_VERSION

LOADING = "loading"
READY = "ready"
FAILED = "failed"


class NotReady(Exception):
    """The agent is still loading, or failed to load; ``status`` is the HTTP status to answer."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class Busy(Exception):
    """A batch is already being answered."""


Outcome = list[str] | Exception  # the responses, or what the agent raised


class Connection(Protocol):
    """A client's connection, which the main thread may serve once it has answered its batch."""

    @property
    def closed(self) -> bool: ...

    def fileno(self) -> int: ...

    def pending(self) -> bool:
        """Whether a request is already read in, waiting (no need to wait for the socket)."""
        ...

    def serve_one(self) -> None:
        """Read and answer the next request (a batch is answered with ``answer_here``)."""
        ...


@dataclass
class _Job:
    batch: BatchRequest
    deadline_at: float | None
    respond: Callable[[Outcome], None]
    connection: Connection | None = None  # served by the main thread after the batch
    done: threading.Event = field(default_factory=threading.Event)


class AgentHost:
    """Loads ``spec`` (``module:Class``) and runs its batches on the calling (main) thread."""

    def __init__(
        self, spec: str | None, task: str | None = None, search_socket: str | None = None
    ) -> None:
        self.spec = spec
        self.task = task
        self.search_socket = search_socket
        self.state = LOADING
        self.error: str | None = None
        self.error_traceback: str | None = None
        self.agent: LoadedAgent | None = None
        self.load_s: float | None = None
        self._started = time.monotonic()
        self._jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self._job_queued, self._queue_job = os.pipe()  # a byte per job: wakes the main thread
        self._busy = threading.Lock()
        self._current: BatchRequest | None = None

    def load(self) -> None:
        """Import and construct the agent; a failure is kept for ``/ready``, never raised."""
        try:
            if not self.spec:
                self.spec = kit_entry_point()
                print(f"agentkit: PODIUM_AGENT is not set; the kit's {self.spec}", flush=True)
            self.agent = load_agent(self.spec, self.task, self.search_socket)
        except (Exception, SystemExit) as exc:  # sys.exit() in the participant's code too
            self.error = f"{type(exc).__name__}: {exc}"
            self.error_traceback = traceback.format_exc()
            self.state = FAILED
            print(f"agentkit: the agent failed to load:\n{self.error_traceback}", flush=True)
        else:
            self.state = READY
        finally:
            self.load_s = round(time.monotonic() - self._started, 3)

    def readiness(self) -> tuple[int, dict[str, Any]]:
        """The ``/ready`` answer: (HTTP status, JSON body)."""
        if self.state == LOADING:
            return 503, {"ready": False, "loading_s": round(time.monotonic() - self._started, 3)}
        if self.state == FAILED or self.agent is None:
            return 500, {"ready": False, "error": self.error, "traceback": self.error_traceback}
        return 200, {
            "ready": True,
            "batch_size": self.agent.batch_size,
            "kit": self.agent.kit,
            "agent": self.agent.spec,
            "load_s": self.load_s,
            "agentkit_version": __version__,
            "protocol_version": PROTOCOL_VERSION,
            "python_version": platform.python_version(),
            "pillow_version": PIL.__version__,
        }

    def submit(
        self,
        batch: BatchRequest,
        deadline_at: float | None,
        respond: Callable[[Outcome], None],
        connection: Connection | None = None,
    ) -> threading.Event:
        """Queue ``batch`` for the main thread, which calls ``respond`` with the outcome, then
        serves ``connection`` (if given) until it closes or another batch is queued, then sets
        the event returned. Raises :class:`NotReady` or :class:`Busy`."""
        self._claim(batch)
        job = _Job(batch, deadline_at, respond, connection)
        self._jobs.put(job)
        os.write(self._queue_job, b".")
        return job.done

    def answer_here(
        self, batch: BatchRequest, deadline_at: float | None, respond: Callable[[Outcome], None]
    ) -> None:
        """Answer ``batch`` now, on the main thread, serving the connection it came on. Raises
        :class:`Busy` (another connection's batch is queued)."""
        self._claim(batch)
        self._answer(batch, deadline_at, respond)

    def _claim(self, batch: BatchRequest) -> None:
        if self.state == LOADING:
            raise NotReady(503, "the agent is still loading")
        if self.state == FAILED:
            raise NotReady(500, f"the agent failed to load: {self.error}")
        if not self._busy.acquire(blocking=False):
            current = self._current
            raise Busy(
                f"batch {current.batch_id if current else '?'} is still being answered; "
                "send one batch at a time"
            )
        self._current = batch

    def serve_batches(self) -> None:
        """Answer queued batches forever (call on the main thread after :meth:`load`)."""
        while True:
            select.select([self._job_queued], [], [])
            os.read(self._job_queued, 1)
            job = self._jobs.get()
            try:
                self._answer(job.batch, job.deadline_at, job.respond)
                if job.connection is not None:
                    self._serve(job.connection)
            finally:
                job.done.set()

    def _serve(self, connection: Connection) -> None:
        """The connection's next requests, until it closes or another connection queues a
        batch (then its own server thread goes on with it)."""
        while not connection.closed:
            if not connection.pending():
                ready, _, _ = select.select([connection.fileno(), self._job_queued], [], [])
                if self._job_queued in ready:
                    return
            connection.serve_one()

    def _answer(
        self, batch: BatchRequest, deadline_at: float | None, respond: Callable[[Outcome], None]
    ) -> None:
        assert self.agent is not None  # batches are only claimed once loaded
        deadline.start_batch(deadline_at)
        outcome: Outcome
        try:
            outcome = self.agent.answer(batch)
        except Exception as exc:
            outcome = exc
        finally:
            deadline.end_batch()
            self._current = None
            self._busy.release()
        try:
            respond(outcome)
        except Exception:  # respond answers its own failures; this one must never stop serving
            traceback.print_exc()
        finally:
            del outcome  # an exception's traceback holds the batch's images
            batch.release()  # before the next batch is read: its files' space is freed
