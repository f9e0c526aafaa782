"""faiss indexes over L2-normalised embeddings, built once and cached on disk.

- Up to ``IVF_THRESHOLD`` vectors the index is exact (``IndexFlatIP``: inner product, which is
  cosine similarity for normalised vectors). Above it, ``IndexIVFFlat`` with
  ``4 * sqrt(n)`` inverted lists, probing ``NPROBE`` of them per query: approximate, about
  ``nlist / NPROBE`` times less work per query, and trained on a sample of the vectors.
- The cache entry is ``<cache_dir>/<key>.faiss`` plus ``<key>.rows.npz``; the key hashes the
  content of the corpus files an index is built from, the encoder id and the build settings:
  any change builds a new index, an unchanged corpus is never encoded twice. Writes are atomic
  (temporary file, then rename). The cache directory is ``$PODIUM_SEARCH_CACHE`` or
  ``~/.cache/podium/search``.
- On a machine with GPUs and the faiss-gpu build (``deploy/requirements-gpu.txt``) the index is
  copied to all GPUs for searching; otherwise it stays on the CPU.
"""

from __future__ import annotations

import hashlib
import logging
import math
import os
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import faiss
import numpy as np

log = logging.getLogger(__name__)

IVF_THRESHOLD = 200_000
NPROBE = 32
FORMAT_VERSION = "1"
CACHE_ENV = "PODIUM_SEARCH_CACHE"


def default_cache_dir() -> Path:
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "podium" / "search")


def cache_key(*parts: str) -> str:
    """A hex digest naming one index: content hash, encoder id, build settings."""
    return hashlib.sha256("\0".join((FORMAT_VERSION, *parts)).encode()).hexdigest()


def build_index(vectors: np.ndarray, ivf_threshold: int = IVF_THRESHOLD) -> faiss.Index:
    """An inner-product index over ``vectors`` (rows L2-normalised); IVF when large."""
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    count, dim = vectors.shape
    index: faiss.Index
    if count <= ivf_threshold:
        index = faiss.IndexFlatIP(dim)
    else:
        nlist = max(1, min(count, int(4 * math.sqrt(count))))
        ivf = faiss.IndexIVFFlat(faiss.IndexFlatIP(dim), dim, nlist, faiss.METRIC_INNER_PRODUCT)
        sample = np.random.default_rng(0).permutation(count)[: nlist * 64]
        ivf.train(vectors[np.sort(sample)])
        ivf.nprobe = min(NPROBE, nlist)
        index = ivf
    index.add(vectors)
    return index


def wants_gpu(num_gpus: int, has_gpu_build: bool, prefer_gpu: bool | None = None) -> bool:
    """Whether to search on GPUs: ``prefer_gpu`` None means "when available"."""
    available = num_gpus > 0 and has_gpu_build
    if prefer_gpu and not available:
        raise RuntimeError("GPU search asked for, but faiss sees no GPU or lacks GPU support")
    return available if prefer_gpu is None else prefer_gpu


def place(index: faiss.Index, prefer_gpu: bool | None = None) -> faiss.Index:
    """The index on all GPUs when ``wants_gpu`` says so, else the CPU index itself."""
    has_gpu_build = hasattr(faiss, "index_cpu_to_all_gpus") and hasattr(faiss, "get_num_gpus")
    num_gpus = faiss.get_num_gpus() if has_gpu_build else 0
    if wants_gpu(num_gpus, has_gpu_build, prefer_gpu):
        log.info("search index on %d GPU(s)", num_gpus)
        return faiss.index_cpu_to_all_gpus(index)
    return index


@dataclass
class SearchIndex:
    """A placed faiss index and the per-row arrays stored with it."""

    index: faiss.Index
    rows: dict[str, np.ndarray] = field(default_factory=dict)
    built: bool = False  # True when this process encoded the corpus, False when read from cache
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def search(self, query: np.ndarray, k: int) -> list[tuple[int, float]]:
        """The top ``k`` rows for one normalised query vector, best first."""
        k = min(k, self.index.ntotal)
        if k <= 0:
            return []
        query = np.ascontiguousarray(query.reshape(1, -1), dtype=np.float32)
        with self._lock:  # GPU indexes must not be searched from two threads at once
            scores, ids = self.index.search(query, k)
        return [(int(i), float(s)) for i, s in zip(ids[0], scores[0], strict=True) if i >= 0]


Builder = Callable[[], tuple[np.ndarray, dict[str, np.ndarray]]]


def load_or_build(
    key: str,
    build: Builder,
    cache_dir: Path | None = None,
    *,
    ivf_threshold: int = IVF_THRESHOLD,
    prefer_gpu: bool | None = None,
) -> SearchIndex:
    """The cached index named ``key``; on a miss, ``build()`` gives the vectors and row arrays."""
    path = (cache_dir or default_cache_dir()) / f"{key}.faiss"
    stored = _read(path)
    if stored is not None:
        index, rows = stored
        log.info("search index %s read from cache", path)
        return SearchIndex(place(index, prefer_gpu), rows, built=False)
    vectors, rows = build()
    index = build_index(vectors, ivf_threshold)
    _write(path, index, rows)
    log.info("search index %s built from %d vectors", path, index.ntotal)
    return SearchIndex(place(index, prefer_gpu), rows, built=True)


def _read(path: Path) -> tuple[faiss.Index, dict[str, np.ndarray]] | None:
    rows_path = path.with_suffix(".rows.npz")
    if not (path.is_file() and rows_path.is_file()):
        return None
    try:
        index = faiss.read_index(str(path))
        with np.load(rows_path, allow_pickle=False) as data:
            rows = {name: data[name] for name in data.files}
    except (OSError, ValueError, RuntimeError) as exc:
        log.warning("search index cache %s unreadable (%s): rebuilding", path, exc)
        return None
    return index, rows


def _write(path: Path, index: faiss.Index, rows: dict[str, np.ndarray]) -> None:
    """Rows first, then the index: a present index file means a complete entry."""
    path.parent.mkdir(parents=True, exist_ok=True)
    # (the stubs read **rows as possibly holding savez's own allow_pickle keyword)
    _atomic(path.with_suffix(".rows.npz"), lambda out: np.savez(out, **rows))  # type: ignore[arg-type]
    _atomic(path, lambda out: faiss.write_index(index, out))


def _atomic(path: Path, write: Callable[[str], None]) -> None:
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=path.suffix)
    os.close(handle)
    try:
        write(temporary)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
