"""The agent's output shared while its container runs (no Docker: a container stand-in)."""

from __future__ import annotations

import threading
import time

from workers.output_watch import OutputWatch


class Container:
    def __init__(self) -> None:
        self.lines = [b"loading weights\n"]

    def logs(self, **_: object) -> bytes:
        return b"".join(self.lines)


class Box:
    def __init__(self, container: Container | None) -> None:
        self.container = container


def wait_for(condition, timeout_s: float = 5.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_the_output_so_far_is_shared_until_the_block_ends():
    container, shared = Container(), []
    with OutputWatch(Box(container), shared.append, every_s=0.01):
        wait_for(lambda: shared)
        container.lines.append(b"ready\x00\n")
        wait_for(lambda: shared[-1].endswith("ready\n"))  # NUL bytes removed
    assert shared[0] == "loading weights\n"
    seen = len(shared)
    time.sleep(0.05)
    assert len(shared) == seen, "nothing is shared once the block ended"
    assert not any(t.name == "agent-output" for t in threading.enumerate())


def test_a_failure_to_share_never_stops_the_watch_or_the_run():
    calls = []

    def share(text: str) -> None:
        calls.append(text)
        raise RuntimeError("database gone")

    with OutputWatch(Box(Container()), share, every_s=0.01):
        wait_for(lambda: len(calls) >= 2)
    with OutputWatch(Box(None), calls.append, every_s=0.01):  # no container yet: nothing
        time.sleep(0.05)
    assert all(text == "loading weights\n" for text in calls)
