"""An MRAG-Suite agent with no model, grounded in what was retrieved.

It picks the passage sharing the most words with the question, answers with the first
"<number> million" it states, and gives that passage as its long answer. With no passage
naming the question's subject it says it does not know (an empty short answer).
"""

from __future__ import annotations

import re
from typing import Any

_WORD = re.compile(r"[a-z0-9]+")
_FIGURE = re.compile(r"\b\d+(?:\.\d+)? million\b")
_COMMON = {"what", "was", "the", "of", "in", "a", "an", "is", "were"}


def words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower())) - _COMMON


class GroundedAgent:
    def get_batch_size(self) -> int:
        return 8

    def batch_answer(self, items: list[Any]) -> list[dict[str, str]]:
        return [self.answer(item) for item in items]

    def answer(self, item: Any) -> dict[str, str]:
        asked = words(item.question)
        best = max(item.passages, key=lambda p: len(asked & words(p.text)), default=None)
        if best is None or len(asked & words(best.text)) < len(asked) - 1:
            return {"short_answer": "", "long_answer": ""}
        figure = _FIGURE.search(best.text)
        return {"short_answer": figure.group(0) if figure else "", "long_answer": best.text}
