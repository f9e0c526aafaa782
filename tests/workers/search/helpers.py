"""Test corpora: distinct entity pictures, web pages with one fact each, a counting encoder."""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

from workers.search.corpus import ChunkPolicy

KINDS = ("vehicle", "plant", "bird", "building", "lamp", "chair")
ENTITY_COUNT = 24
# Small chunks, so every page has several and de-duplication by page is exercised.
SMALL_CHUNKS = ChunkPolicy(words=24, overlap=6)


def draw_entity(seed: int, size: tuple[int, int] = (240, 320)) -> Image.Image:
    """A distinct picture per seed: a coloured background with six coloured shapes."""
    rng = random.Random(seed)
    image = Image.new("RGB", size, tuple(rng.randrange(256) for _ in range(3)))
    draw = ImageDraw.Draw(image)
    for _ in range(6):
        x, y = rng.randrange(size[0]), rng.randrange(size[1])
        box = [x, y, x + rng.randrange(30, 150), y + rng.randrange(30, 150)]
        colour = tuple(rng.randrange(256) for _ in range(3))
        (draw.ellipse if rng.random() < 0.5 else draw.rectangle)(box, fill=colour)
    return image


def entity_name(i: int) -> str:
    return f"{KINDS[i % len(KINDS)]} model {i:02d}"


def brand(i: int) -> str:
    return f"Brand{i:02d}"


def page_text(i: int) -> str:
    filler = " ".join(f"background{(i * 7 + j) % 50}" for j in range(20))
    fact = f"The {entity_name(i)} was first made in {1900 + i} in the town of Town{i:02d}."
    return f"{filler} {fact} {filler}"


@dataclass
class CorpusFiles:
    root: Path
    images: list[Path]

    def write_web(self, pages: Sequence[dict]) -> None:
        lines = [json.dumps(page) for page in pages]
        (self.root / "web.jsonl").write_text("\n".join(lines) + "\n")


LIGHTHOUSE_URL = "https://example.org/lighthouse"


def web_pages(count: int = ENTITY_COUNT) -> list[dict]:
    """One page per entity with one fact in it, and a long page whose every chunk is on topic."""
    pages = []
    for i in range(count):
        pages.append(
            {
                "page_url": f"https://example.org/{i:02d}",
                "page_name": f"About the {entity_name(i)}",
                "page_snippet": f"Everything on the {entity_name(i)} by {brand(i)}.",
                "text": page_text(i),
            }
        )
    sentence = "The old lighthouse keeper climbs the lighthouse tower to light the lamp at dusk."
    pages.append(
        {
            "page_url": LIGHTHOUSE_URL,
            "page_name": "Lighthouse keepers",
            "page_snippet": "A day in the life of a lighthouse keeper.",
            "text": " ".join([sentence] * 8),
        }
    )
    return pages


def write_corpus(root: Path, count: int = ENTITY_COUNT) -> CorpusFiles:
    (root / "images").mkdir(parents=True)
    entries, images = [], []
    for i in range(count):
        path = root / "images" / f"e{i:02d}.png"
        draw_entity(i).save(path)
        images.append(path)
        entity = {
            "entity_name": entity_name(i),
            "entity_attributes": {"brand": brand(i), "colour": f"colour {i}"},
        }
        entries.append(
            {"image": f"images/{path.name}", "url": f"https://img/{i}", "entities": [entity]}
        )
    (root / "images.jsonl").write_text("".join(json.dumps(e) + "\n" for e in entries))
    files = CorpusFiles(root, images)
    files.write_web(web_pages(count))
    return files


class CountingEncoder:
    """Wraps a real encoder and counts the items it encodes (to see cache hits)."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.id = inner.id
        self.spec = inner.spec
        self.encoded = 0

    def encode(self, items) -> np.ndarray:
        self.encoded += len(items)
        return self.inner.encode(items)
