from __future__ import annotations

import json

import pytest
from PIL import Image, ImageDraw, ImageEnhance, ImageFilter

from tests.workers.search.helpers import (
    ENTITY_COUNT,
    LIGHTHOUSE_URL,
    SMALL_CHUNKS,
    CorpusFiles,
    brand,
    draw_entity,
    entity_name,
    web_pages,
)
from workers.search.corpus import ChunkPolicy, CorpusError, WebPage, page_chunks
from workers.search.engine import SearchEngine
from workers.search.queries import TEXT_QUERY_REFUSED, BadQuery, SearchRefused

TASK1, TASK2, TASK3 = "single-source-augmentation", "multi-source-augmentation", "multi-turn-qa"


def test_own_image_ranks_its_entity_first_with_the_official_shape(engine: SearchEngine) -> None:
    for i in range(ENTITY_COUNT):
        results = engine.image_search(draw_entity(i), k=5)
        assert len(results) == 5
        top = results[0]
        assert list(top) == ["index", "score", "url", "entities"]
        assert type(top["index"]) is int and type(top["score"]) is float
        assert top["index"] == i and top["url"] == f"https://img/{i}"
        assert top["entities"] == [
            {
                "entity_name": entity_name(i),
                "entity_attributes": {"brand": brand(i), "colour": f"colour {i}"},
            }
        ]
        assert top["score"] == pytest.approx(1.0, abs=1e-4)
        scores = [r["score"] for r in results]
        assert scores == sorted(scores, reverse=True) and scores[1] < 0.9
    json.dumps(results)  # plain JSON types only


def _occlude(image: Image.Image) -> Image.Image:
    image = image.copy()
    w, h = image.size
    ImageDraw.Draw(image).rectangle([w * 0.6, h * 0.6, w * 0.85, h * 0.85], fill=(128, 128, 128))
    return image


DEGRADATIONS = {
    "blurred": lambda im: im.filter(ImageFilter.GaussianBlur(4)),
    "low light": lambda im: ImageEnhance.Brightness(im).enhance(0.3),
    "truncated": lambda im: im.crop((24, 32, 216, 288)),
    "occluded": _occlude,
}


@pytest.mark.parametrize("quality", DEGRADATIONS)
def test_degraded_photo_still_finds_its_entity_most_times(
    engine: SearchEngine, quality: str
) -> None:
    degrade = DEGRADATIONS[quality]
    found = sum(
        engine.image_search(degrade(draw_entity(i)), k=1)[0]["index"] == i
        for i in range(ENTITY_COUNT)
    )
    assert found >= 0.8 * ENTITY_COUNT


def test_web_search_finds_the_page_with_the_fact_and_dedupes_by_page(
    engine: SearchEngine,
) -> None:
    results = engine.web_search(f"When was the {entity_name(7)} first made?", k=10)
    top = results[0]
    assert list(top) == ["index", "score", "page_name", "page_snippet", "page_url", "page_content"]
    assert "Town07" in top["page_content"]
    assert top["page_url"] == "https://example.org/07"
    assert top["page_name"] == f"About the {entity_name(7)}"
    assert top["page_snippet"] == f"Everything on the {entity_name(7)} by {brand(7)}."
    assert top["index"].startswith("https://example.org/07_chunk_")
    assert type(top["score"]) is float and 0 < top["score"] <= 1.0
    scores = [r["score"] for r in results]
    assert scores == sorted(scores, reverse=True)


def test_web_results_are_deduplicated_by_page(engine: SearchEngine) -> None:
    # Every chunk of the lighthouse page matches, so 5 chunks make fewer than 5 pages.
    results = engine.web_search("lighthouse keeper lights the lamp", k=5)
    urls = [r["page_url"] for r in results]
    assert urls[0] == LIGHTHOUSE_URL
    assert len(urls) == len(set(urls)) and 1 <= len(results) < 5


def test_the_chunk_returned_is_the_one_holding_the_fact(engine: SearchEngine) -> None:
    top = engine.web_search(f"{entity_name(11)} made in town Town11", k=20)[0]
    n = int(top["index"].rsplit("_chunk_", 1)[1])
    assert "Town11." in page_chunks(WebPage(**web_pages()[11]), SMALL_CHUNKS)[n]


def test_task_one_refuses_text_queries_like_the_official_api(engine: SearchEngine) -> None:
    with pytest.raises(SearchRefused) as caught:
        engine.web_search("anything", k=5, task=TASK1)
    assert str(caught.value) == TEXT_QUERY_REFUSED
    assert isinstance(caught.value, ValueError)
    assert engine.web_search("anything", k=1, task=TASK2)
    assert engine.web_search("anything", k=1, task=TASK3)
    with pytest.raises(ValueError, match="unknown task"):
        engine.web_search("anything", task="task-4")


@pytest.mark.parametrize("k", [0, -1, 1001, 2.5, "5", True, None])
def test_bad_k_is_refused(engine: SearchEngine, k: object) -> None:
    with pytest.raises(BadQuery, match="k must be an integer from 1 to 1000"):
        engine.image_search(draw_entity(0), k=k)  # type: ignore[arg-type]
    with pytest.raises(BadQuery, match="k must be"):
        engine.web_search("x", k=k)  # type: ignore[arg-type]


def test_k_over_the_corpus_size_returns_everything(engine: SearchEngine) -> None:
    assert len(engine.image_search(draw_entity(0), k=500)) == ENTITY_COUNT
    assert len(engine.web_search("town", k=500)) == len(web_pages())
    with pytest.raises(BadQuery, match="non-empty string"):
        engine.web_search("  ")


def test_index_is_cached_and_rebuilt_only_for_what_changed(
    corpus: CorpusFiles, make_engine
) -> None:
    first, text, image = make_engine(corpus.root)
    first.prepare(TASK3)
    assert first.indexes_built == {"image": True, "web": True}
    assert image.encoded == len(corpus.images) and text.encoded > len(corpus.images)

    again, text, image = make_engine(corpus.root)
    again.prepare(TASK3)
    assert again.indexes_built == {"image": False, "web": False}
    assert (text.encoded, image.encoded) == (0, 0)
    assert again.image_search(draw_entity(3), k=1)[0]["index"] == 3

    pages = web_pages()
    pages[0]["text"] += " A new sentence about penguins on the ice shelf."
    corpus.write_web(pages)
    changed, text, image = make_engine(corpus.root)
    changed.prepare(TASK3)
    assert changed.indexes_built == {"image": False, "web": True}
    assert changed.web_search("penguins on ice", k=1)[0]["page_url"] == "https://example.org/00"

    draw_entity(99).save(corpus.images[5])
    redrawn, _, image = make_engine(corpus.root)
    redrawn.prepare(TASK1)
    assert redrawn.indexes_built == {"image": True}
    assert image.encoded == len(corpus.images)
    assert redrawn.image_search(draw_entity(99), k=1)[0]["index"] == 5

    other_chunks, text, _ = make_engine(corpus.root, chunk_policy=ChunkPolicy(words=30, overlap=0))
    other_chunks.prepare(TASK2)
    assert other_chunks.indexes_built["web"] is True


def test_task_one_prepares_no_web_index(corpus: CorpusFiles, make_engine) -> None:
    engine, text, _ = make_engine(corpus.root)
    engine.prepare(TASK1)
    assert engine.indexes_built == {"image": True}
    assert text.encoded == 0


def test_ivf_index_for_large_corpora_still_finds_the_entity(
    corpus: CorpusFiles, make_engine
) -> None:
    engine, _, _ = make_engine(corpus.root, ivf_threshold=4)
    assert engine.image_search(draw_entity(5), k=3)[0]["index"] == 5
    assert type(engine._images()[1].index).__name__ == "IndexIVFFlat"


def test_unreadable_corpus_image_is_named(corpus: CorpusFiles, make_engine) -> None:
    corpus.images[2].write_bytes(b"not a picture")
    engine, _, _ = make_engine(corpus.root)
    with pytest.raises(CorpusError, match=r"e02\.png: not a readable image"):
        engine.prepare(TASK1)
