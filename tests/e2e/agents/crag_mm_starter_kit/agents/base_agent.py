from typing import Any

from cragmm_search.search import UnifiedSearchPipeline
from PIL import Image


class BaseAgent:
    """What every agent of the kit implements: a batch size, and one answer per query."""

    def __init__(self, search_pipeline: UnifiedSearchPipeline):
        self.search_pipeline = search_pipeline

    def get_batch_size(self) -> int:
        raise NotImplementedError

    def batch_generate_response(
        self,
        queries: list[str],
        images: list[Image.Image],
        message_histories: list[list[dict[str, Any]]],
    ) -> list[str]:
        raise NotImplementedError
