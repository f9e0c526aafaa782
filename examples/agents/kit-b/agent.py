"""An agent with the post-challenge (kit B) interface that answers from ``rag_context`` alone.

Podium retrieves the context for each turn itself, as the post-challenge evaluator did: the
image-search part lists entities with their attributes as JSON blocks
(``Entity 1: <name>`` / ``Entity attributes: {...}``). This agent trusts the first entity and
answers its name, or the attributes the question names; otherwise "I don't know".
"""

from __future__ import annotations

import json
import re
from typing import Any

from PIL import Image

IDK = "I don't know"
ENTITY_BLOCK = re.compile(r"Entity 1: (.+)\nEntity attributes: (\{.*?\n\})", re.DOTALL)
ASKS_NAME = re.compile(r"^what (?:[\w ]+ )?is (?:this|it)\??$", re.IGNORECASE)


class ContextAgent:
    """Kit B: constructed with keyword arguments; receives ``rag_context_list`` per batch."""

    def __init__(self, **kwargs: Any) -> None:
        self.is_multi_turn = bool(kwargs.get("is_multi_turn", False))

    def get_batch_size(self) -> int:
        return 16

    def batch_generate_response(
        self,
        queries: list[str],
        images: list[Image.Image],
        message_histories: list[list[dict[str, str]]],
        rag_context_list: list[str],
        **kwargs: Any,
    ) -> list[str]:
        contexts = zip(queries, rag_context_list, strict=True)
        return [self.answer(query, context) for query, context in contexts]

    def answer(self, query: str, rag_context: str) -> str:
        match = ENTITY_BLOCK.search(rag_context)
        if not match:
            return IDK
        name = match[1].strip()
        try:
            attributes = json.loads(match[2])
        except ValueError:
            return IDK
        query = query.strip().lower()
        if ASKS_NAME.match(query):
            return name
        named = sorted(
            (query.find(key.lower()), value)
            for key, value in attributes.items()
            if re.search(rf"\b{re.escape(key.lower())}\b", query)
        )
        return " and ".join(str(value) for _, value in named) if named else IDK
