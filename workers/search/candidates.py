"""Search among one item's candidate images (Visual-RAG's retrieval and top-k settings).

An agent names an item of the batch it is answering and a query, a text or an image; Podium
ranks that item's candidates, and nothing else, by cosine similarity in the image encoder's
space (the paper's retrieval baseline is CLIP: text to image). A text query needs an encoder
with a text tower (``clip:<dir>``, :class:`workers.search.encoders.TextImageEncoder`); with
``colour`` (tests, demo) a query is an example image.

Candidates are embedded once per file content (sha256) and encoder: kept in memory, and on disk
under the engine's cache directory (one ``.npy`` per image), so a split's images are embedded
once for every run on it. The runner has a run's candidates embedded before its agent starts
(:meth:`CandidateEmbeddings.embed`), so no search waits for it.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from workers.search import encoders
from workers.search.image_files import open_rgb
from workers.search.queries import SearchRefused, check_k

EMBED_BATCH = 64
TEXT_NEEDS_CLIP = (
    "this challenge's image encoder ranks candidates by an example image only: search with an "
    "image (a text query needs a text-and-image encoder such as clip:<dir>)"
)


class CandidateEmbeddings:
    """Embeddings of candidate image files by the encoder ``load_encoder`` gives."""

    def __init__(
        self, load_encoder: Callable[[], encoders.ImageEncoder], cache_dir: Path | None = None
    ) -> None:
        """``cache_dir``: where embeddings are kept on disk (None: in memory only)."""
        self._load_encoder = load_encoder
        self._cache_dir = cache_dir
        self._rows: dict[str, np.ndarray] = {}  # file path -> embedding
        self._lock = threading.Lock()

    def embed(self, paths: Iterable[str]) -> int:
        """Embed the files not embedded yet (from the disk cache where it has them); how many
        were encoded now. Raises :class:`OSError` or :class:`ValueError` for an unreadable file."""
        with self._lock:
            wanted = [path for path in dict.fromkeys(paths) if path not in self._rows]
        if not wanted:
            return 0
        encoder = self._load_encoder()
        store = self._store(encoder)
        digests = {path: hashlib.sha256(Path(path).read_bytes()).hexdigest() for path in wanted}
        missing = []
        for path, digest in digests.items():
            cached = store / digest[:2] / f"{digest}.npy" if store else None
            if cached is not None and cached.exists():
                self._keep(path, np.load(cached))
            else:
                missing.append(path)
        for start in range(0, len(missing), EMBED_BATCH):
            batch = missing[start : start + EMBED_BATCH]
            for path, row in zip(
                batch, encoder.encode([open_rgb(Path(path)) for path in batch]), strict=True
            ):
                self._keep(path, row)
                if store is not None:
                    _save(store / digests[path][:2] / f"{digests[path]}.npy", row)
        return len(missing)

    def rank(
        self, candidates: Sequence[tuple[str, str]], query: str | Image.Image, k: Any
    ) -> list[dict[str, Any]]:
        """The ``k`` best of ``candidates`` (``(image id, file)``) for ``query``, best first:
        ``[{"id": str, "score": float}]``. Raises :class:`SearchRefused` for a text query the
        encoder cannot embed."""
        k = check_k(k)
        encoder = self._load_encoder()
        if isinstance(query, str):
            if not isinstance(encoder, encoders.TextImageEncoder):
                raise SearchRefused(TEXT_NEEDS_CLIP)
            vector = encoder.encode_texts([query])[0]
        else:
            vector = encoder.encode([query.convert("RGB")])[0]
        self.embed(path for _, path in candidates)
        rows = np.stack([self._rows[path] for _, path in candidates])
        scores = rows @ vector
        order = sorted(range(len(candidates)), key=lambda i: (-scores[i], i))[:k]
        return [{"id": candidates[i][0], "score": float(scores[i])} for i in order]

    def _keep(self, path: str, row: np.ndarray) -> None:
        with self._lock:
            self._rows[path] = np.asarray(row, dtype=np.float32)

    def _store(self, encoder: encoders.ImageEncoder) -> Path | None:
        if self._cache_dir is None:
            return None
        return self._cache_dir / "candidates" / hashlib.sha256(encoder.id.encode()).hexdigest()[:16]


def _save(path: Path, row: np.ndarray) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f"{path.stem}.{os.getpid()}.part.npy")
    np.save(partial, np.asarray(row, dtype=np.float32))
    partial.replace(path)  # whole or not at all: another process may read it
