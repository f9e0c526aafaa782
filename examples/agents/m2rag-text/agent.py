"""An M2RAG agent that answers in text only: the first sentence of each page, no image."""

from __future__ import annotations

from typing import Any


class TextAgent:
    def get_batch_size(self) -> int:
        return 8

    def batch_answer(self, items: list[Any]) -> list[dict[str, Any]]:
        return [
            {"answer": " ".join(page.text.split(". ")[0].rstrip(".") + "." for page in item.pages)}
            for item in items
        ]
