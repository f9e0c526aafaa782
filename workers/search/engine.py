"""Image search and web search over a corpus, with the official API's result shapes and rules.

Mirrors the official ``cragmm_search`` ``UnifiedSearchPipeline``:

- image search (an image in, top k out): ``{"index": int, "score": float (cosine), "url": str,
  "entities": [{"entity_name", "entity_attributes"}]}``, best first;
- web search (text in): the top k *chunks* are fetched and then de-duplicated by page, keeping
  each page's best chunk, so fewer than k results may come back:
  ``{"index": "<page_url>_chunk_<n>", "score", "page_name", "page_snippet", "page_url"}``;
- in ``single-source-augmentation`` (Task 1) web search is not enabled, and a text query is
  refused with the official pipeline's ``ValueError`` message, ``TEXT_QUERY_REFUSED``.

Indexes are built (or read from the cache) on first use, or up front with ``prepare(task)``.
An engine without a corpus (Visual-RAG) searches only items' candidates (``candidates``).
"""

from __future__ import annotations

import functools
import logging
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image
from tqdm import tqdm

from workers.search import encoders
from workers.search.candidates import CandidateEmbeddings
from workers.search.corpus import ChunkPolicy, Corpus, chunk_index, page_chunks
from workers.search.image_files import open_rgb
from workers.search.index import (
    IVF_THRESHOLD,
    Builder,
    SearchIndex,
    cache_key,
    default_cache_dir,
    load_or_build,
)
from workers.search.queries import (
    NO_CORPUS,
    TEXT_QUERY_REFUSED,
    BadQuery,
    SearchRefused,
    check_k,
    web_search_enabled,
)

log = logging.getLogger(__name__)

ENCODE_BATCH = 64
TEXT_ENCODER_ENV = "PODIUM_SEARCH_TEXT_ENCODER"
IMAGE_ENCODER_ENV = "PODIUM_SEARCH_IMAGE_ENCODER"


def _encode_in_batches(
    encode: Callable[[Sequence[Any]], np.ndarray], items: Sequence[Any], what: str
) -> np.ndarray:
    rows = []
    with tqdm(total=len(items), desc=f"encoding {what}", unit=what, disable=None) as bar:
        for start in range(0, len(items), ENCODE_BATCH):
            batch = items[start : start + ENCODE_BATCH]
            rows.append(encode(batch))
            bar.update(len(batch))
    return np.concatenate(rows)


@dataclass(frozen=True)
class EngineSpec:
    """What it takes to make the same engine again in another process (JSON-able)."""

    corpus_dir: str | None
    text_encoder: str
    image_encoder: str
    cache_dir: str | None
    chunk_words: int
    chunk_overlap: int
    chunk_max: int
    ivf_threshold: int
    prefer_gpu: bool | None

    def to_json(self) -> dict[str, object]:
        return asdict(self)


class SearchEngine:
    """Image and web search over one corpus directory (None: no corpus), and search among
    items' candidate images."""

    def __init__(
        self,
        corpus_dir: Path | str | None,
        *,
        text_encoder: str | encoders.TextEncoder | None = None,
        image_encoder: str | encoders.ImageEncoder | None = None,
        cache_dir: str | Path | None = None,
        chunk_policy: ChunkPolicy | None = None,
        ivf_threshold: int = IVF_THRESHOLD,
        prefer_gpu: bool | None = None,
    ) -> None:
        """Encoders are spec strings (loaded on first use) or loaded encoders to share."""
        self.corpus = Corpus(Path(corpus_dir)) if corpus_dir is not None else None
        text_encoder = text_encoder or _configured(TEXT_ENCODER_ENV, encoders.DEFAULT_TEXT_ENCODER)
        image_encoder = image_encoder or _configured(
            IMAGE_ENCODER_ENV, encoders.DEFAULT_IMAGE_ENCODER
        )
        self._text_spec, self._text_encoder = _spec_or_encoder(text_encoder)
        self._image_spec, self._image_encoder = _spec_or_encoder(image_encoder)
        self.cache_dir = Path(cache_dir) if cache_dir is not None else None
        self.chunk_policy = chunk_policy or ChunkPolicy()
        self.ivf_threshold = ivf_threshold
        self.prefer_gpu = prefer_gpu
        self._lock = threading.Lock()
        self._image_side: tuple[list[Any], SearchIndex] | None = None
        self._web_side: tuple[list[Any], SearchIndex] | None = None

    @classmethod
    def from_spec(cls, spec: EngineSpec) -> SearchEngine:
        return cls(
            spec.corpus_dir,
            text_encoder=spec.text_encoder,
            image_encoder=spec.image_encoder,
            cache_dir=spec.cache_dir,
            chunk_policy=ChunkPolicy(spec.chunk_words, spec.chunk_overlap, spec.chunk_max),
            ivf_threshold=spec.ivf_threshold,
            prefer_gpu=spec.prefer_gpu,
        )

    @property
    def spec(self) -> EngineSpec:
        return EngineSpec(
            corpus_dir=str(self.corpus.root) if self.corpus is not None else None,
            text_encoder=self._text_spec,
            image_encoder=self._image_spec,
            cache_dir=str(self.cache_dir) if self.cache_dir is not None else None,
            chunk_words=self.chunk_policy.words,
            chunk_overlap=self.chunk_policy.overlap,
            chunk_max=self.chunk_policy.max_chunks,
            ivf_threshold=self.ivf_threshold,
            prefer_gpu=self.prefer_gpu,
        )

    # -- public API ------------------------------------------------------------------------

    def prepare(self, task: str) -> None:
        """Load encoders and build or read the indexes ``task`` needs, before the first query."""
        if self.corpus is None:
            self._image_encoder_loaded()
            return
        self._images()
        if web_search_enabled(task):
            self._web()

    def image_search(self, image: Image.Image, k: int = 5) -> list[dict[str, Any]]:
        k = check_k(k)
        entries, index = self._images()
        query = self._image_encoder_loaded().encode([image])[0]
        return [
            {
                "index": row,
                "score": score,
                "url": entries[row].url,
                "entities": [
                    {"entity_name": e.entity_name, "entity_attributes": e.entity_attributes}
                    for e in entries[row].entities
                ],
            }
            for row, score in index.search(query, k)
        ]

    def corpus_image(self, url: str) -> Image.Image:
        """The corpus image whose URL is ``url`` (the official pipeline downloads an image URL;
        agents have no network, so only the corpus' own URLs resolve), or ``BadQuery``."""
        entries, _ = self._images()
        for entry in entries:
            if entry.url == url:
                return open_rgb(entry.image)
        raise BadQuery(
            f"image_url {url[:200]!r} names no image of this challenge's corpus: agents have no "
            "network, so only the corpus' own image URLs can be searched"
        )

    def web_search(
        self, query: str, k: int = 5, *, task: str | None = None
    ) -> list[dict[str, Any]]:
        """Top pages for ``query``; refused when ``task`` is given and has no web search."""
        self._corpus()
        if task is not None and not web_search_enabled(task):
            raise SearchRefused(TEXT_QUERY_REFUSED)
        k = check_k(k)
        if not isinstance(query, str) or not query.strip():
            raise BadQuery("query must be a non-empty string")
        pages, index = self._web()
        vector = self._text_encoder_loaded().encode([query])[0]
        best: dict[int, tuple[int, float]] = {}
        for row, score in index.search(vector, k):
            page = int(index.rows["page"][row])
            best.setdefault(page, (int(index.rows["chunk"][row]), score))
        ranked = sorted(best.items(), key=lambda item: item[1][1], reverse=True)
        return [
            {
                "index": chunk_index(pages[page].page_url, chunk),
                "score": score,
                "page_name": pages[page].page_name,
                "page_snippet": pages[page].page_snippet,
                "page_url": pages[page].page_url,
                "page_content": pages[page].text,
            }
            for page, (chunk, score) in ranked
        ]

    @functools.cached_property
    def candidates(self) -> CandidateEmbeddings:
        """Search among items' candidate images (Visual-RAG), with this engine's image encoder."""
        return CandidateEmbeddings(
            self._image_encoder_loaded, self.cache_dir or default_cache_dir()
        )

    @property
    def indexes_built(self) -> dict[str, bool]:
        """For each loaded index, whether this process encoded it (False: read from cache)."""
        sides = {"image": self._image_side, "web": self._web_side}
        return {name: side[1].built for name, side in sides.items() if side is not None}

    # -- lazy loading ----------------------------------------------------------------------

    def _image_encoder_loaded(self) -> encoders.ImageEncoder:
        with self._lock:
            if self._image_encoder is None:
                self._image_encoder = encoders.image_encoder(self._image_spec)
            encoder: encoders.ImageEncoder = self._image_encoder
            return encoder

    def _text_encoder_loaded(self) -> encoders.TextEncoder:
        with self._lock:
            if self._text_encoder is None:
                self._text_encoder = encoders.text_encoder(self._text_spec)
            encoder: encoders.TextEncoder = self._text_encoder
            return encoder

    def _images(self) -> tuple[list[Any], SearchIndex]:
        corpus = self._corpus()
        encoder = self._image_encoder_loaded()
        with self._lock:
            if self._image_side is None:
                entries = corpus.image_entries()
                key = cache_key("image", corpus.image_content_hash(entries), encoder.id)

                def build() -> tuple[np.ndarray, dict[str, np.ndarray]]:
                    return _encode_in_batches(
                        lambda batch: encoder.encode([open_rgb(e.image) for e in batch]),
                        entries,
                        "images",
                    ), {}

                self._image_side = (entries, self._load_or_build(key, build))
            return self._image_side

    def _web(self) -> tuple[list[Any], SearchIndex]:
        corpus = self._corpus()
        encoder = self._text_encoder_loaded()
        with self._lock:
            if self._web_side is None:
                pages = corpus.web_pages()
                key = cache_key("web", corpus.web_content_hash(), encoder.id, self.chunk_policy.id)

                def build() -> tuple[np.ndarray, dict[str, np.ndarray]]:
                    texts, page_rows, chunk_rows = [], [], []
                    for number, page in enumerate(pages):
                        for n, text in enumerate(page_chunks(page, self.chunk_policy)):
                            texts.append(text)
                            page_rows.append(number)
                            chunk_rows.append(n)
                    rows = {
                        "page": np.asarray(page_rows, np.int64),
                        "chunk": np.asarray(chunk_rows, np.int64),
                    }
                    return _encode_in_batches(encoder.encode, texts, "chunks"), rows

                self._web_side = (pages, self._load_or_build(key, build))
            return self._web_side

    def _corpus(self) -> Corpus:
        if self.corpus is None:
            raise SearchRefused(NO_CORPUS)
        return self.corpus

    def _load_or_build(self, key: str, build: Builder) -> SearchIndex:
        return load_or_build(
            key,
            build,
            self.cache_dir,
            ivf_threshold=self.ivf_threshold,
            prefer_gpu=self.prefer_gpu,
        )


def _spec_or_encoder(encoder: Any) -> tuple[str, Any]:
    return (encoder, None) if isinstance(encoder, str) else (encoder.spec, encoder)


def _configured(variable: str, default: str) -> str:
    value = os.environ.get(variable)
    if value:
        return value
    log.info("search: %s not set, using the default encoder %r", variable, default)
    return default
