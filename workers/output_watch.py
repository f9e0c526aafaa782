"""The agent's output while it runs: a thread reads the container's log tail every few seconds
and hands it on (the pipeline stores it on the run, so the run page can show it live)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from workers.agent_container import container_output

LOG_EVERY_S = 5.0
logger = logging.getLogger(__name__)


class OutputWatch:
    """While the block runs, every ``every_s``: ``share(tail)`` with the tail of ``box``'s
    container output (capped as the kept log is). A failure to read or to share is logged and
    the run goes on; the thread is stopped and joined when the block ends."""

    def __init__(
        self, box: Any, share: Callable[[str], None], every_s: float = LOG_EVERY_S
    ) -> None:
        self.box = box
        self.share = share
        self.every_s = every_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="agent-output", daemon=True)

    def __enter__(self) -> OutputWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join()

    def _loop(self) -> None:
        while not self._stop.wait(self.every_s):
            container = self.box.container
            if container is None:
                continue
            try:
                self.share(container_output(container))
            except Exception:  # the log is a convenience: never the run's failure
                logger.exception("the agent's output could not be shared")
