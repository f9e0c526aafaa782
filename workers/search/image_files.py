"""Reading a stored image file (the corpus', a split's candidates) for an encoder.

Its own module so that the engine (``workers.search.engine``) and the candidates' embeddings
(``workers.search.candidates``) both import it, and neither imports the other for it.
"""

from __future__ import annotations

from pathlib import Path

from PIL import Image, UnidentifiedImageError

from workers.search.corpus import CorpusError


def open_rgb(path: Path) -> Image.Image:
    """A stored image (the corpus', a split's), decoded as RGB; ``CorpusError`` naming it."""
    try:
        with Image.open(path) as image:
            return image.convert("RGB")
    except (UnidentifiedImageError, OSError, Image.DecompressionBombError) as exc:
        raise CorpusError(f"{path}: not a readable image: {exc}") from exc
