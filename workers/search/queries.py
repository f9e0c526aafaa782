"""What an agent may ask the search service, checked before anything is searched: ``k``, the
query image (its size read before it is decoded), which task enables web search, and the
refusals in the official API's words."""

from __future__ import annotations

import io

from PIL import Image, UnidentifiedImageError

from agentkit.protocol import TASKS

WEB_SEARCH_TASKS = frozenset({"multi-source-augmentation", "multi-turn-qa"})
TEXT_QUERY_REFUSED = (
    "Text input is not supported as web search is not enabled. Please provide image path, "
    "PIL image or image embeddings for image search."
)
NO_CORPUS = (
    "this task has no search corpus: its agents search only their items' candidates "
    "(search_pipeline.search_candidates)"
)
MAX_K = 1000
MAX_IMAGE_PIXELS = 24_000_000  # checked before decoding, so a small file cannot expand to GBs
# A query image larger than this on a side is scaled down as it is decoded (JPEGs decode at the
# reduced scale directly): encoders see at most this much, whatever an agent sends. CLIP-style
# encoders resize to 224 pixels anyway; a 960x1280 photo is not touched.
MAX_IMAGE_SIDE = 1280


class SearchRefused(ValueError):
    """A search the task does not enable; the message is the official API's."""


class BadQuery(ValueError):
    """A query that cannot be searched (bad k, empty text, undecodable image)."""


def web_search_enabled(task: str) -> bool:
    if task not in TASKS:
        raise ValueError(f"unknown task {task!r}; expected one of {', '.join(TASKS)}")
    return task in WEB_SEARCH_TASKS


def check_k(k: object) -> int:
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
        raise BadQuery(f"k must be an integer from 1 to {MAX_K}, got {k!r:.40}")
    return k


def decode_image(data: bytes) -> Image.Image:
    """A fully decoded image from file bytes, at most ``MAX_IMAGE_SIDE`` on a side, or
    ``BadQuery`` saying why not."""
    errors = (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError)
    try:
        image = Image.open(io.BytesIO(data))  # reads the header only
    except errors as exc:
        raise BadQuery(f"image is not a decodable picture: {exc}") from exc
    if image.width * image.height > MAX_IMAGE_PIXELS:
        raise BadQuery(
            f"image is {image.width}x{image.height}, over the {MAX_IMAGE_PIXELS}-pixel limit"
        )
    try:
        image.thumbnail((MAX_IMAGE_SIDE, MAX_IMAGE_SIDE))  # loads at a reduced scale if larger
        image.load()
    except errors as exc:
        raise BadQuery(f"image is not a decodable picture: {exc}") from exc
    return image
