"""A Visual-RAG agent that never answers: "I don't know", and the candidates in the order given
(the retrieval baseline of a random ranking). Scores 0 accuracy and a 100 % IDK rate."""

from __future__ import annotations

from typing import Any


class IDKAgent:
    def get_batch_size(self) -> int:
        return 16

    def batch_answer(self, items: list[Any]) -> list[dict[str, Any]]:
        return [
            {"answer": "I don't know", "ranking": [c.id for c in item.candidates]} for item in items
        ]
