"""Kit B's ``rag_context``: the context string Podium retrieves for each turn itself.

Behaves like the post-challenge release's retriever (``utils/retriever.py``), so a kit B agent
sees the context it was built for:

- image search with k=30, keeping results scoring above 0.75; entity names listed once each in
  rank order, then each entity's attributes as indented JSON while the image part stays under
  8,000 characters (about 2,000 tokens);
- in tasks with web search, web search with k=50 on the query (or on ``full_query`` when the
  caller has a rewritten one), then page snippets as numbered ``<DOC>`` blocks while the web part
  stays under 32,000 characters (about 8,000 tokens);
- the whole wrapped in ``<search results>`` ... ``</search results>``, with the same layout
  (entity list, attribute blocks, numbered ``<DOC>`` blocks) and caps as the release; the
  instruction sentences around each part are Podium's own wording.
"""

from __future__ import annotations

import json
from typing import Any

from PIL import Image

from workers.search.engine import SearchEngine
from workers.search.queries import web_search_enabled

IMAGE_RESULTS = 30
IMAGE_SCORE_THRESHOLD = 0.75
IMAGE_CHAR_CAP = 2000 * 4
WEB_RESULTS = 50
WEB_CHAR_CAP = 8000 * 4

IMAGE_INTRO = (
    "Below are descriptions of entities whose pictures look similar to the image in the"
    " question. They may show a different entity: use them only when you are sure they describe"
    " the entity in the image, and ignore them otherwise.\n\n"
)
ENTITY_NAMES = "Entities found by image similarity, best match first: {names}.\n\n"
ATTRIBUTES_INTRO = (
    "Attributes of some of these entities follow. Use them only when you are sure the entity"
    " they belong to is the one in the image.\n"
)
IMAGE_OUTRO = (
    "Use the entity descriptions above only when you are sure they describe the entity in the"
    " image; otherwise ignore them.\n\n"
)
WEB_INTRO = (
    'Below are snippets of web pages found for the question "{query}". They may be irrelevant'
    " or wrong: use them only when you are sure they answer the question, and ignore them"
    " otherwise.\n\n"
)
WEB_DOC = (
    "<DOC>\nWebpage ID: [{number}]\nTitle: {title}\nWeb content snippet: {snippet}\n</DOC>\n\n"
)
WEB_OUTRO = (
    "Use the web snippets above only when you are sure they are relevant and truthful;"
    " otherwise ignore them.\n\n"
)


def image_context(results: list[dict[str, Any]]) -> str:
    """The image part for image search results (empty when none scores above the threshold)."""
    kept = [r for r in results if r.get("score", 0) > IMAGE_SCORE_THRESHOLD]
    if not kept:
        return ""
    entities = [entity for result in kept for entity in result.get("entities", [])]
    names = list(dict.fromkeys(entity["entity_name"] for entity in entities))
    text = IMAGE_INTRO + ENTITY_NAMES.format(names=", ".join(names)) + ATTRIBUTES_INTRO
    seen: set[str] = set()
    count = 0
    for result in kept:
        if len(text) > IMAGE_CHAR_CAP:
            break
        for entity in result.get("entities", []):
            name, attributes = entity["entity_name"], entity.get("entity_attributes")
            if name in seen:
                continue
            seen.add(name)
            if not attributes or len(text) + len(str(attributes)) >= IMAGE_CHAR_CAP:
                continue
            count += 1
            rendered = json.dumps(attributes, indent=2, ensure_ascii=False)
            text += f"Entity {count}: {name}\nEntity attributes: {rendered}\n\n"
    return text + IMAGE_OUTRO


def web_context(query: str, results: list[dict[str, Any]]) -> str:
    """The web part for web search results (empty when there are none)."""
    if not results:
        return ""
    text = WEB_INTRO.format(query=query)
    count = 0
    for result in results:
        snippet = result.get("page_snippet", "")
        if not snippet:
            continue
        if len(text) + len(snippet) >= WEB_CHAR_CAP:
            break
        count += 1
        text += WEB_DOC.format(number=count, title=result.get("page_name", ""), snippet=snippet)
    return text + WEB_OUTRO


def rag_context(
    engine: SearchEngine,
    query: str,
    image: Image.Image | None,
    task: str,
    full_query: str | None = None,
) -> str:
    """The ``rag_context`` string for one turn of ``task`` (no image: no image part)."""
    context = "<search results>"
    if image is not None:
        context += image_context(engine.image_search(image, k=IMAGE_RESULTS))
    if web_search_enabled(task):
        results = engine.web_search(full_query or query, k=WEB_RESULTS)
        context += web_context(query, results)
    return context + "</search results>"
