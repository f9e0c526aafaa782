"""What handling a request cost: its wall time, the most bytes the temporary folder held at
once (a watcher thread sums it every few milliseconds) and Python's peak allocations
(``tracemalloc``). Used to show that a refusal comes before the work it refuses."""

from __future__ import annotations

import contextlib
import os
import tempfile
import threading
import time
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

MiB = 1024 * 1024


@dataclass
class Cost:
    seconds: float = 0.0
    temp_bytes: int = 0  # the most the temporary folder held at once
    memory_bytes: int = 0  # Python's peak allocations meanwhile


def bytes_under(root: Path) -> int:
    total = 0
    for directory, _, files in os.walk(root):
        for name in files:
            with contextlib.suppress(FileNotFoundError):  # removed meanwhile
                total += os.lstat(os.path.join(directory, name)).st_size
    return total


@contextmanager
def measured(scratch: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Cost]:
    """The block's cost, with ``scratch`` (empty) as the temporary folder of everything in it
    (``tempfile``, and Django's uploads through it)."""
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    cost, done = Cost(), threading.Event()

    def watch() -> None:
        while not done.wait(0.003):
            cost.temp_bytes = max(cost.temp_bytes, bytes_under(scratch))

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    tracemalloc.start()
    start = time.perf_counter()
    try:
        yield cost
    finally:
        cost.seconds = time.perf_counter() - start
        cost.memory_bytes = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        done.set()
        watcher.join()
        cost.temp_bytes = max(cost.temp_bytes, bytes_under(scratch))
