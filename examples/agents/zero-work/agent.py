"""An agent that does no work at all: an empty answer per query, at once.

Used by ``bench/runtime_overhead.py`` to measure what Podium's runtime itself costs per turn.
"""

from __future__ import annotations

from typing import Any


class ZeroWorkAgent:
    """Kit A interface; never looks at the images, so agentkit never decodes them."""

    def __init__(self, search_pipeline: Any = None) -> None:
        self.search_pipeline = search_pipeline

    def get_batch_size(self) -> int:
        return 16

    def batch_generate_response(
        self, queries: list[str], images: list[Any], message_histories: list[Any]
    ) -> list[str]:
        return [""] * len(queries)
