from __future__ import annotations

from pathlib import Path

import faiss
import numpy as np
import pytest

from workers.search.encoders import normalise
from workers.search.index import build_index, cache_key, load_or_build, place, wants_gpu


def _vectors(count: int, dim: int = 16, seed: int = 0) -> np.ndarray:
    return normalise(np.random.default_rng(seed).normal(size=(count, dim)))


@pytest.mark.parametrize(
    ("num_gpus", "has_gpu_build", "prefer", "expected"),
    [
        (0, False, None, False),
        (0, True, None, False),
        (2, False, None, False),
        (2, True, None, True),
        (2, True, False, False),
        (1, True, True, True),
    ],
)
def test_gpu_is_used_exactly_when_available_and_not_declined(
    num_gpus: int, has_gpu_build: bool, prefer: bool | None, expected: bool
) -> None:
    assert wants_gpu(num_gpus, has_gpu_build, prefer) is expected


def test_asking_for_a_missing_gpu_is_an_error() -> None:
    with pytest.raises(RuntimeError, match="GPU search asked for"):
        wants_gpu(0, True, prefer_gpu=True)


def test_cpu_machine_keeps_the_cpu_index() -> None:
    index = build_index(_vectors(10))
    if faiss.get_num_gpus() == 0:
        assert place(index) is index
    assert place(index, prefer_gpu=False) is index


def test_flat_below_threshold_ivf_above_both_find_each_vector() -> None:
    vectors = _vectors(3000)
    flat, ivf = build_index(vectors, ivf_threshold=5000), build_index(vectors, ivf_threshold=1000)
    assert isinstance(flat, faiss.IndexFlatIP) and isinstance(ivf, faiss.IndexIVFFlat)
    assert ivf.nlist == int(4 * np.sqrt(3000)) and ivf.nprobe == 32
    for index in (flat, ivf):
        scores, ids = index.search(vectors[:50], 1)
        assert (ids[:, 0] == np.arange(50)).all()
        assert np.allclose(scores[:, 0], 1.0, atol=1e-5)


def test_cache_round_trip_and_unreadable_entry_is_rebuilt(tmp_path: Path) -> None:
    vectors, calls = _vectors(20), []

    def build():
        calls.append(1)
        return vectors, {"page": np.arange(20)}

    key = cache_key("web", "content", "encoder")
    first = load_or_build(key, build, tmp_path)
    second = load_or_build(key, build, tmp_path)
    assert (first.built, second.built, len(calls)) == (True, False, 1)
    assert (second.rows["page"] == np.arange(20)).all()
    assert second.search(vectors[7], 3)[0][0] == 7
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"{key}.faiss", f"{key}.rows.npz"]

    (tmp_path / f"{key}.faiss").write_bytes(b"garbage")
    third = load_or_build(key, build, tmp_path)
    assert third.built and len(calls) == 2
    assert third.search(vectors[3], 1) == [(3, pytest.approx(1.0, abs=1e-5))]


def test_cache_key_changes_with_every_part() -> None:
    keys = {cache_key("image", "a", "enc"), cache_key("image", "b", "enc")}
    keys |= {cache_key("image", "a", "enc2"), cache_key("web", "a", "enc")}
    assert len(keys) == 4


def test_search_with_k_beyond_the_index_returns_all_rows(tmp_path: Path) -> None:
    index = load_or_build("k", lambda: (_vectors(4), {}), tmp_path)
    assert len(index.search(_vectors(1, seed=9)[0], 10)) == 4
