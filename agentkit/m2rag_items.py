"""Protocol v3 items for M2RAG (``"protocol": "m2rag"``): per item::

    {"item_id": str, "query": str,
     "pages": [{"title": str, "text": str,
                "images": [{"index": int, "path": "/podium/images/...", "caption": str}]}],
     "extra_images": [{"index": int, "path": ..., "caption": str}]}

and the agent answers ``{"answer": markdown}`` per item, placing image N (its ``index``) as
``![caption](image N)``. Images are opened lazily (pixels decoded on first use).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from PIL import Image

from agentkit.image_files import BatchFiles
from agentkit.image_open import open_image_file


class M2RAGItemError(ValueError):
    """An item breaks the protocol; the message names the field."""


@dataclass(frozen=True)
class M2RAGImage:
    index: int
    caption: str
    image: Image.Image


@dataclass(frozen=True)
class M2RAGPage:
    title: str
    text: str
    images: list[M2RAGImage]


@dataclass(frozen=True)
class M2RAGItem:
    item_id: str
    query: str
    pages: list[M2RAGPage]
    extra_images: list[M2RAGImage]

    @property
    def images(self) -> list[M2RAGImage]:
        """Every image, in index order (the pages' then the extra ones)."""
        return [image for page in self.pages for image in page.images] + self.extra_images


def _text(entry: dict[str, Any], key: str, where: str) -> str:
    value = entry.get(key)
    if not isinstance(value, str):
        raise M2RAGItemError(f"{where}.{key} must be a string")
    return value


def _images(entry: dict[str, Any], key: str, where: str, files: BatchFiles) -> list[M2RAGImage]:
    value = entry.get(key, [])
    if not isinstance(value, list):
        raise M2RAGItemError(f"{where}.{key} must be a list")
    images = []
    for j, image in enumerate(value):
        at = f"{where}.{key}[{j}]"
        index = image.get("index") if isinstance(image, dict) else None
        if isinstance(index, bool) or not isinstance(index, int) or index < 0:
            raise M2RAGItemError(f"{at}.index must be a non-negative integer")
        caption = _text(image, "caption", at)
        images.append(M2RAGImage(index, caption, open_image_file(image.get("path"), at, files)))
    return images


def parse_m2rag_item(item: Any, where: str, files: BatchFiles) -> M2RAGItem:
    if not isinstance(item, dict):
        raise M2RAGItemError(f"{where} must be an object")
    pages = item.get("pages")
    if not isinstance(pages, list):
        raise M2RAGItemError(f"{where}.pages must be a list")
    parsed = []
    for j, page in enumerate(pages):
        if not isinstance(page, dict):
            raise M2RAGItemError(f"{where}.pages[{j}] must be an object")
        at = f"{where}.pages[{j}]"
        parsed.append(
            M2RAGPage(_text(page, "title", at), _text(page, "text", at),
                      _images(page, "images", at, files))
        )  # fmt: skip
    return M2RAGItem(
        _text(item, "item_id", where), _text(item, "query", where), parsed,
        _images(item, "extra_images", where, files),
    )  # fmt: skip


def m2rag_problem(response: Any) -> str | None:
    """Why a response breaks ``{"answer": str}`` (None when it does not)."""
    if not isinstance(response, dict) or not isinstance(response.get("answer"), str):
        return "must be a dict with a str 'answer'"
    unknown = sorted(set(response) - {"answer"})
    return f"unknown key {unknown[0]!r}" if unknown else None
