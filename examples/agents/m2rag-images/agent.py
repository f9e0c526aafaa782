"""An M2RAG agent with no model: it answers with the first sentence of each page and places
the images whose caption shares the most words with the query (at most three), each after a
sentence introducing it."""

from __future__ import annotations

import re
from typing import Any

WORD = re.compile(r"[a-z]{3,}")


def words(text: str) -> set[str]:
    return set(WORD.findall(text.lower()))


class ImagesAgent:
    def get_batch_size(self) -> int:
        return 8

    def batch_answer(self, items: list[Any]) -> list[dict[str, Any]]:
        return [{"answer": self.answer(item)} for item in items]

    def answer(self, item: Any) -> str:
        asked = words(item.query)
        lines = [page.text.split(". ")[0].rstrip(".") + "." for page in item.pages]
        ranked = sorted(item.images, key=lambda image: -len(asked & words(image.caption)))
        for image in [image for image in ranked if asked & words(image.caption)][:3]:
            lines.append(f"The image below shows {image.caption}.")
            lines.append(f"![{image.caption}](image {image.index})")
        return "\n\n".join(lines)
