"""Kit A, one turn per batch: 0.3 s of thought, then an image search; answers the top entity's
name ("no entity found" when it has none). Slow enough for a test to stop Podium's search
process in the middle of a run, most likely while a batch is being answered and before its
search."""

from __future__ import annotations

import time
from typing import Any


class SlowSearcher:
    def __init__(self, search_pipeline: Any) -> None:
        self.search_pipeline = search_pipeline

    def get_batch_size(self) -> int:
        return 1

    def batch_generate_response(self, queries, images, message_histories) -> list[str]:
        time.sleep(0.3)
        results = self.search_pipeline(images[0], k=1)
        names = [e["entity_name"] for result in results for e in result["entities"]]
        return [names[0] if names else "no entity found"]
