"""The simplest agent: it always says it does not know (scored as missing, never wrong)."""

from __future__ import annotations

from typing import Any

from PIL import Image


class IDKAgent:
    """Kit A interface; needs no model and no search."""

    def __init__(self, search_pipeline: Any = None) -> None:
        self.search_pipeline = search_pipeline

    def get_batch_size(self) -> int:
        return 16

    def batch_generate_response(
        self,
        queries: list[str],
        images: list[Image.Image],
        message_histories: list[list[dict[str, str]]],
    ) -> list[str]:
        return ["I don't know" for _ in queries]
