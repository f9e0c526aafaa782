import random
import string
from typing import Any

from agents.base_agent import BaseAgent
from cragmm_search.search import UnifiedSearchPipeline
from PIL import Image


class RandomAgent(BaseAgent):
    """The kit's reference agent: a random string of letters for every query."""

    def __init__(self, search_pipeline: UnifiedSearchPipeline):
        super().__init__(search_pipeline)
        print("RandomAgent ready")

    def get_batch_size(self) -> int:
        return 16

    def batch_generate_response(
        self,
        queries: list[str],
        images: list[Image.Image],
        message_histories: list[list[dict[str, Any]]],
    ) -> list[str]:
        letters = string.ascii_letters + " "
        return ["".join(random.choice(letters) for _ in range(40)) for _ in queries]
