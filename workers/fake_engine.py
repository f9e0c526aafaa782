"""A fake agent engine: runs answered with zero work, in the worker's own process, no Docker.

Only for measuring Podium's control plane (``bench/control_plane.py``) and the test that keeps
that bench honest (``tests/leaderboard/test_fake_engine.py``): many simulated GPU nodes claim
and answer runs on one machine. It takes the place of the agent container and nothing else
(``run_agent(start_container=FakeContainer)``): the runner still plans the batches, stages each
batch's images as files, encodes every request and reads every reply, and the pipeline stores
the answers, judges and scores them as it does a real agent's.

A worker uses it only when ``PODIUM_AGENT_ENGINE=fake`` (``podium/settings.py``), which no
deployment file sets (``tests/deploy``) and which makes the worker's and the web's readiness
probes fail (``podium/health.py``): a process using it is never taken into service.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from workers.agent_client import AgentClient, AgentReply, Readiness
from workers.agent_container import ContainerState
from workers.image_volume import ImageVolume
from workers.images import AgentImage

if TYPE_CHECKING:
    from workers.search.process import SearchSocket

FAKE_ANSWER = "i don't know"  # every item's reply: a valid CRAG-MM answer, scored missing
FAKE_BATCH_SIZE = 16  # what /ready says (the official CRAG-MM maximum)
RUNNING = ContainerState(running=True, exit_code=None, oom_killed=False)


def fake_image(name: str) -> AgentImage:
    """The image a fake node says it has for ``name`` (a submission's artifact): a stable,
    content-like ID, so the pipeline records and compares digests as it does for real ones."""
    digest = "sha256:" + hashlib.sha256(f"podium-fake-engine:{name}".encode()).hexdigest()
    return AgentImage(ref=digest, image_id=digest)


class FakeAgent(AgentClient):
    """An agent answering ``/ready`` and ``/batch`` in-process: each item ``FAKE_ANSWER``."""

    def __init__(self, batch_size: int = FAKE_BATCH_SIZE) -> None:
        super().__init__(Path("/nonexistent/fake-agent.sock"))  # never connected
        self.batch_size = batch_size
        self.batches = 0

    def ready(self, timeout_s: float = 5.0) -> Readiness:
        return Readiness(ready=True, batch_size=self.batch_size)

    def batch(
        self, body: bytes, timeout_s: float, sent: Callable[[], None] | None = None
    ) -> AgentReply:
        request = json.loads(body)
        if sent is not None:
            sent()
        items = request.get("turns") or request.get("items") or []
        self.batches += 1
        return AgentReply(
            200, {"batch_id": request["batch_id"], "responses": [FAKE_ANSWER] * len(items)}
        )


class FakeContainer:
    """One start of the fake agent (``workers.agent_container.AgentBox``): its image directory
    is a temporary directory of this process, removed on leaving."""

    def __init__(self, *_: object, **__: object) -> None:
        """Takes what the runner passes (``agent_container.StartContainer``) and needs none of
        it: no image, sandbox, image volume or search."""
        self.agent: AgentClient | None = None
        self.images: ImageVolume | None = None
        self.search_handle: SearchSocket | None = None  # searches are not served
        self.container: None = None  # no output to watch (``workers.output_watch``)
        self.output = ""
        self._dir: Path | None = None

    def __enter__(self) -> FakeContainer:
        self._dir = Path(tempfile.mkdtemp(prefix="podium-fake-agent-"))
        self.agent = FakeAgent()
        self.images = ImageVolume(self._dir)
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def wait_ready(self, deadline: float) -> Readiness:
        assert self.agent is not None, "entered first"
        return self.agent.ready()

    def settled_state(self) -> ContainerState:
        return RUNNING

    def crash_reason(self, state: ContainerState) -> str:
        return "the fake agent never stops"
