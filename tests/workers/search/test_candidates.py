"""Search among one item's candidate images (Visual-RAG): ranking, restriction, cache, service."""

from __future__ import annotations

import base64
import io
import shutil
from pathlib import Path

import httpx
import numpy as np
import pytest
from PIL import Image

from tests.workers.search.helpers import CountingEncoder, draw_entity
from workers.search.candidates import TEXT_NEEDS_CLIP, CandidateEmbeddings
from workers.search.encoders import ColourImageEncoder, image_encoder
from workers.search.engine import SearchEngine
from workers.search.queries import NO_CORPUS, SearchRefused
from workers.search.service import start_search_service


@pytest.fixture
def pool(tmp_path: Path) -> list[tuple[str, str]]:
    """Eight candidate files, ``(image id, path)``, each a distinct picture (seed = index)."""
    files = []
    for seed in range(8):
        path = tmp_path / f"cand-{seed}.jpg"
        draw_entity(seed).save(path, "JPEG", quality=95)
        files.append((f"guid-{seed}", str(path)))
    return files


def test_an_example_image_ranks_its_own_candidate_first_among_the_allowed_only(pool) -> None:
    embeddings = CandidateEmbeddings(ColourImageEncoder)
    allowed = pool[2:6]
    results = embeddings.rank(allowed, draw_entity(4), 3)
    assert results[0]["id"] == "guid-4"
    assert len(results) == 3 and {r["id"] for r in results} <= {i for i, _ in allowed}
    scores = [r["score"] for r in results]
    assert scores == sorted(scores, reverse=True) and scores[0] > 0.95
    assert len(embeddings.rank(allowed, draw_entity(4), 50)) == 4  # never more than allowed


def test_text_needs_an_encoder_with_a_text_tower(pool) -> None:
    with pytest.raises(SearchRefused, match="search with an image"):
        CandidateEmbeddings(ColourImageEncoder).rank(pool, "red wings", 3)
    assert "clip:<dir>" in TEXT_NEEDS_CLIP


def test_a_text_query_ranks_by_clip_s_text_tower(pool, tiny_clip_dir: Path) -> None:
    encoder = image_encoder(f"clip:{tiny_clip_dir}")
    embeddings = CandidateEmbeddings(lambda: encoder)
    results = embeddings.rank(pool, "what colour are the hindwings", 8)
    text = encoder.encode_texts(["what colour are the hindwings"])[0]
    images = encoder.encode([Image.open(path).convert("RGB") for _, path in pool])
    expected = sorted(range(8), key=lambda i: -float(images[i] @ text))
    assert [r["id"] for r in results] == [f"guid-{i}" for i in expected]
    assert np.allclose([r["score"] for r in results], [images[i] @ text for i in expected], 1e-4)


def test_embeddings_are_kept_on_disk_by_content(pool, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first = CountingEncoder(ColourImageEncoder())
    assert CandidateEmbeddings(lambda: first, cache).embed(p for _, p in pool) == 8
    assert first.encoded == 8
    moved = tmp_path / "elsewhere.jpg"  # the same content at another path: not encoded again
    shutil.copy(pool[3][1], moved)
    second = CountingEncoder(ColourImageEncoder())
    again = CandidateEmbeddings(lambda: second, cache)
    assert again.embed([*(p for _, p in pool), str(moved)]) == 0 and second.encoded == 0
    assert again.rank([("copy", str(moved)), *pool[:2]], draw_entity(3), 1)[0]["id"] == "copy"


def test_the_service_searches_only_the_batch_s_items(pool, socket_dir: Path) -> None:
    engine = SearchEngine(None, image_encoder=ColourImageEncoder(), text_encoder="minilm")
    service = start_search_service(engine, socket_dir / "search.sock", "visual-rag")
    client = httpx.Client(
        transport=httpx.HTTPTransport(uds=str(service.socket_path)), base_url="http://s"
    )
    buffer = io.BytesIO()
    draw_entity(5).save(buffer, "PNG")
    example = base64.b64encode(buffer.getvalue()).decode()
    try:
        service.allow(4, {"retrieval/q1": pool[4:], "retrieval/q2": pool[:4]})
        answer = client.post(
            "/search/candidates", json={"item_id": "retrieval/q1", "image_b64": example, "k": 2}
        )
        assert answer.status_code == 200
        assert [r["id"] for r in answer.json()["results"]] == [
            "guid-5",
            answer.json()["results"][1]["id"],
        ]
        assert answer.json()["results"][1]["id"] in {"guid-4", "guid-6", "guid-7"}
        unknown = client.post("/search/candidates", json={"item_id": "retrieval/q9", "query": "x"})
        assert unknown.status_code == 404 and "not in the batch" in unknown.json()["error"]
        both = client.post(
            "/search/candidates",
            json={"item_id": "retrieval/q2", "query": "x", "image_b64": example},
        )
        assert both.status_code == 400 and "one of 'query'" in both.json()["error"]
        text = client.post("/search/candidates", json={"item_id": "retrieval/q2", "query": "x"})
        assert text.status_code == 403 and text.json()["error"] == TEXT_NEEDS_CLIP
        over = client.post("/search/candidates", json={"item_id": "retrieval/q2", "query": "x"})
        assert over.status_code == 429  # four searches allowed for this batch
        service.allow(4, {})  # the next batch has no candidates: q1 is gone
        gone = client.post(
            "/search/candidates", json={"item_id": "retrieval/q1", "image_b64": example}
        )
        assert gone.status_code == 404
        no_corpus = client.post("/search/image", json={"image_b64": example, "k": 1})
        assert no_corpus.status_code == 403 and no_corpus.json()["error"] == NO_CORPUS
        web = client.post("/search/web", json={"query": "moths", "k": 1})
        assert web.status_code == 403 and web.json()["error"] == NO_CORPUS
    finally:
        client.close()
        service.close()
