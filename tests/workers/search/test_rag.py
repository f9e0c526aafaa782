from __future__ import annotations

import json

from PIL import Image

from tests.workers.search.helpers import brand, draw_entity, entity_name
from workers.search.engine import SearchEngine
from workers.search.rag import (
    IMAGE_CHAR_CAP,
    IMAGE_INTRO,
    IMAGE_OUTRO,
    WEB_CHAR_CAP,
    WEB_OUTRO,
    image_context,
    rag_context,
    web_context,
)


def _result(score: float, *entities: tuple[str, dict]) -> dict:
    return {
        "index": 0,
        "score": score,
        "url": "u",
        "entities": [{"entity_name": n, "entity_attributes": a} for n, a in entities],
    }


def test_image_part_keeps_scores_above_threshold_and_lists_names_once() -> None:
    text = image_context(
        [
            _result(0.9, ("Eiffel Tower", {"height": "330 m"})),
            _result(0.8, ("Eiffel Tower", {"height": "second copy"}), ("Paris", {})),
            _result(0.75, ("Louvre", {"opened": "1793"})),
        ]
    )
    assert text.startswith(IMAGE_INTRO) and text.endswith(IMAGE_OUTRO)
    assert "best match first: Eiffel Tower, Paris.\n\n" in text
    assert "Louvre" not in text  # 0.75 is not above the threshold
    expected = 'Entity 1: Eiffel Tower\nEntity attributes: {\n  "height": "330 m"\n}\n\n'
    assert expected in text
    assert "second copy" not in text and "Entity 2" not in text  # Paris has no attributes


def test_image_part_is_empty_without_confident_results_and_capped() -> None:
    assert image_context([_result(0.5, ("x", {"a": "b"}))]) == ""
    big = {"description": "y" * 3000}
    results = [_result(0.99, (f"entity {i}", big)) for i in range(10)]
    text = image_context(results)
    assert len(text) - len(IMAGE_OUTRO) < IMAGE_CHAR_CAP
    assert "Entity 2: entity 1" in text and "entity 3\nEntity attributes" not in text


def test_web_part_numbers_snippets_and_stops_at_the_cap() -> None:
    results = [
        {"page_name": "A", "page_snippet": "alpha"},
        {"page_name": "B", "page_snippet": ""},
        {"page_name": "C", "page_snippet": "gamma"},
        {"page_name": "D", "page_snippet": "d" * WEB_CHAR_CAP},
        {"page_name": "E", "page_snippet": "epsilon"},
    ]
    text = web_context('What is "it"?', results)
    assert 'found for the question "What is "it"?".' in text
    assert "<DOC>\nWebpage ID: [1]\nTitle: A\nWeb content snippet: alpha\n</DOC>\n\n" in text
    assert "Webpage ID: [2]\nTitle: C\n" in text
    assert "Title: B" not in text and "Title: D" not in text and "Title: E" not in text
    assert text.endswith(WEB_OUTRO)
    assert web_context("q", []) == ""


def test_task_one_context_holds_the_entity_and_no_web_results(engine: SearchEngine) -> None:
    context = rag_context(
        engine, "What brand is this?", draw_entity(4), "single-source-augmentation"
    )
    assert context.startswith("<search results>") and context.endswith("</search results>")
    assert f"Entity 1: {entity_name(4)}" in context
    assert json.dumps({"brand": brand(4), "colour": "colour 4"}, indent=2) in context
    assert "<DOC>" not in context


def test_web_tasks_add_web_results_for_the_full_query(engine: SearchEngine) -> None:
    for task in ("multi-source-augmentation", "multi-turn-qa"):
        context = rag_context(
            engine,
            "When was it made?",
            draw_entity(2),
            task,
            full_query=f"When was the {entity_name(2)} first made?",
        )
        assert f"Entity 1: {entity_name(2)}" in context
        assert 'found for the question "When was it made?"' in context
        first_doc = context[context.index("<DOC>") :]
        assert first_doc.startswith(f"<DOC>\nWebpage ID: [1]\nTitle: About the {entity_name(2)}\n")


def test_no_confident_image_and_no_image_give_an_empty_context(engine: SearchEngine) -> None:
    grey = Image.new("RGB", (64, 64), (128, 128, 128))
    task = "single-source-augmentation"
    assert rag_context(engine, "q", grey, task) == "<search results></search results>"
    assert rag_context(engine, "q", None, task) == "<search results></search results>"
