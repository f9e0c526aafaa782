"""One start of an agent image in the sandbox: socket and image volumes, container, search.

``AgentContainer`` is a context manager; leaving it (normally, on an exception or on
KeyboardInterrupt) kills and removes the container, both volumes and the search service.
A restart is a fresh ``AgentContainer``: new container, new scratch, new socket and image
directories.
"""

from __future__ import annotations

import functools
import os
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import docker
import docker.errors
import requests.exceptions

from agentkit.protocol import AGENT_SOCKET, SEARCH_SOCKET
from workers.agent_client import AgentClient, AgentTimeout, AgentUnavailable, Readiness
from workers.image_volume import ImageVolume
from workers.outcomes import RunFailed
from workers.sandbox import SandboxPolicy

if TYPE_CHECKING:  # faiss and encoders: imported by whoever starts a search process
    from workers.search.process import SearchProcess, SearchSocket

READY_POLL_S = 0.1
OUTPUT_CAP_BYTES = 64 * 1024  # the agent's output kept per run, across restarts
OUTPUT_TAIL_LINES = 2000  # lines asked of Docker; the byte cap then applies
EXIT_SETTLE_S = 2.0  # how long a crash may take to show up as an exited container


@dataclass(frozen=True)
class ContainerState:
    running: bool
    exit_code: int | None
    oom_killed: bool


class AgentCrashed(Exception):
    """The container stopped or the agent's socket went away; ``state`` says how."""

    def __init__(self, state: ContainerState) -> None:
        super().__init__(f"the agent stopped (exit code {state.exit_code})")
        self.state = state


class AgentBox(Protocol):
    """What the runner holds of one start of an agent (``run_agent``): ``AgentContainer``, or
    ``workers.fake_engine.FakeContainer`` for the control plane's bench and tests. Entering
    starts it; ``agent``, ``images`` and ``search_handle`` are set once it started."""

    agent: AgentClient | None
    images: ImageVolume | None
    search_handle: SearchSocket | None
    output: str  # the tail of its output once it is closed

    def __enter__(self) -> AgentBox: ...

    def __exit__(self, *exc_info: object) -> None: ...

    def wait_ready(self, deadline: float) -> Readiness: ...

    def settled_state(self) -> ContainerState: ...

    def crash_reason(self, state: ContainerState) -> str: ...


class StartContainer(Protocol):
    """How the runner makes an ``AgentBox`` for each start (a restart makes another):
    ``functools.partial(AgentContainer, client)`` on a Docker engine."""

    def __call__(
        self,
        image_id: str,
        task: str,
        policy: SandboxPolicy,
        *,
        image_dir_bytes: int,
        search: SearchProcess | None,
        run_id: str,
    ) -> AgentBox: ...


def _gib(n: int) -> str:
    return f"{n / 1024**3:.2f} GiB" if n >= 1024**3 else f"{n / 1024**2:.0f} MiB"


class AgentContainer:
    def __init__(
        self,
        client: docker.DockerClient,
        image_id: str,
        task: str,
        policy: SandboxPolicy,
        *,
        image_dir_bytes: int,  # workers.image_volume.volume_bytes for the split
        search: SearchProcess | None = None,  # serves this container's search.sock
        run_id: str | None = None,
    ) -> None:
        self.client = client
        self.image_id = image_id
        self.task = task
        self.policy = policy
        self.image_dir_bytes = image_dir_bytes
        self.search = search
        self.run_id = run_id or uuid.uuid4().hex[:12]
        self.volume: Any = None
        self.image_volume: Any = None
        self.container: Any = None
        self.search_handle: SearchSocket | None = None
        self.agent: AgentClient | None = None
        self.images: ImageVolume | None = None
        self.output = ""  # the tail of the container's stdout+stderr, kept by close()

    def __enter__(self) -> AgentContainer:
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def start(self) -> None:
        self.volume = self.policy.create_socket_volume(self.client, self.run_id, self.image_id)
        self.image_volume = self.policy.create_image_volume(
            self.client, self.run_id, self.image_id, self.image_dir_bytes
        )
        kwargs = self.policy.container_kwargs(
            self.image_id, self.task, self.volume.name, self.image_volume.name, self.run_id
        )
        try:
            self.container = self.client.containers.create(**kwargs)
            self.container.start()
        except docker.errors.APIError as exc:
            raise RunFailed(f"the agent container could not start: {exc.explanation}") from None
        socket_dir = Path(self.volume.attrs["Mountpoint"])
        image_dir = Path(self.image_volume.attrs["Mountpoint"])
        if not (os.path.ismount(socket_dir) and os.path.ismount(image_dir)):
            if not self.state().running:
                return  # it already stopped (and Docker unmounted the volume): wait_ready says so
            raise RuntimeError(
                f"{socket_dir} or {image_dir} is not mounted: the runner must run on the Docker "
                "host (it reaches the agent through the volumes' host paths)"
            )
        self.agent = AgentClient(socket_dir / Path(AGENT_SOCKET).name)
        self.images = ImageVolume(image_dir)
        if self.search is not None:
            search_path = socket_dir / Path(SEARCH_SOCKET).name
            if search_path.is_symlink() or search_path.exists():
                search_path.unlink()  # the agent may have planted something there
            self.search_handle = self.search.serve(search_path, self.task)

    def state(self) -> ContainerState:
        try:
            self.container.reload()
        except docker.errors.NotFound:  # Podium's problem, not the agent's: no restart
            raise RuntimeError("the agent container was removed outside the runner") from None
        state = self.container.attrs["State"]
        return ContainerState(
            running=bool(state.get("Running")),
            exit_code=None if state.get("Running") else state.get("ExitCode"),
            oom_killed=bool(state.get("OOMKilled")),
        )

    def settled_state(self) -> ContainerState:
        """The state after a failed call, waiting briefly for a dying container to exit."""
        deadline = time.monotonic() + EXIT_SETTLE_S
        state = self.state()
        while state.running and time.monotonic() < deadline:
            time.sleep(0.05)
            state = self.state()
        return state

    def crash_reason(self, state: ContainerState) -> str:
        if state.oom_killed:
            limit = _gib(self.policy.memory_bytes)
            return f"the agent ran out of memory: it needed more than its {limit} limit; killed"
        if state.running:
            return "the agent closed its socket unexpectedly"
        return f"the agent stopped unexpectedly (exit code {state.exit_code})"

    def wait_ready(self, deadline: float) -> Readiness:
        """Poll ``/ready`` until the agent is loaded; ``deadline`` is a ``time.monotonic()``."""
        while True:
            state = self.state()
            if not state.running:
                raise AgentCrashed(state)
            assert self.agent is not None
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            try:
                readiness = self.agent.ready(timeout_s=min(5.0, remaining))
            except (AgentUnavailable, AgentTimeout):
                readiness = Readiness(ready=False)
            if readiness.failed_status is not None:  # its words kept apart from the reason
                raise RunFailed(
                    "the agent reported that it failed to load "
                    f"(/ready answered HTTP {readiness.failed_status})",
                    readiness.error,
                )
            if readiness.ready:
                return readiness
            time.sleep(min(READY_POLL_S, max(0.0, deadline - time.monotonic())))

    def close(self) -> None:
        if self.agent is not None:
            self.agent.close()
        if self.search_handle is not None:
            self.search_handle.close()
            self.search_handle = None
        if self.container is not None:
            try:  # stopped first: Docker has then copied all of its output before it is read
                _quietly(lambda: self.container.stop(timeout=0))
                self.output = container_output(self.container)
            finally:  # removed even when interrupted while its output was read
                _quietly(lambda: self.container.remove(force=True))
                self.container = None
        for volume in (self.volume, self.image_volume):
            if volume is not None:
                _quietly(functools.partial(volume.remove, force=True))
        self.volume = self.image_volume = None


def clean_output(data: bytes) -> str:
    """Decoded UTF-8 (invalid bytes replaced), NUL bytes removed."""
    return data.decode("utf-8", errors="replace").replace("\x00", "")


def container_output(container: Any, cap_bytes: int = OUTPUT_CAP_BYTES) -> str:
    """The last ``cap_bytes`` of the container's stdout+stderr; empty when Docker cannot say."""
    try:
        data = container.logs(stdout=True, stderr=True, tail=OUTPUT_TAIL_LINES)
    except (docker.errors.APIError, requests.exceptions.RequestException):
        return ""
    return clean_output(data[-cap_bytes:])


def keep_output_tail(kept: str, more: str, cap_bytes: int = OUTPUT_CAP_BYTES) -> str:
    """``kept`` followed by ``more``, cut from the front to at most ``cap_bytes`` UTF-8 bytes
    (on a character boundary)."""
    data = (kept + more).encode("utf-8")
    if len(data) <= cap_bytes:
        return kept + more
    return data[-cap_bytes:].decode("utf-8", errors="ignore")


def _quietly(action: Callable[[], object]) -> None:
    """Clean-up that must not mask the real error; an object already gone is fine."""
    for _ in range(3):
        try:
            action()
            return
        except docker.errors.NotFound:
            return
        except (docker.errors.APIError, requests.exceptions.RequestException):
            time.sleep(0.2)
