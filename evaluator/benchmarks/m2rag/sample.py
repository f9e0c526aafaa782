"""A generated M2RAG sample: ten topics, queries about made-up things, web pages whose images
are drawn with Pillow (a shape of the thing's colour for a relevant image, a grey pattern for
an unrelated one), each with a stored 0-10 relevance score and a caption.

``python -m evaluator sample --protocol m2rag --out DIR`` writes ``DIR/validation/``
(``queries.jsonl`` and ``images/``), in Podium's format (``docs/split-format.md``).
"""

from __future__ import annotations

import io
import json
import random
from pathlib import Path

from PIL import Image, ImageDraw

TOPICS = (
    "animals", "architecture", "cooking", "gardening", "geography", "history", "music",
    "science", "sports", "technology",
)  # fmt: skip
COLOURS = {"red": (200, 40, 40), "blue": (40, 70, 200), "green": (40, 160, 60),
           "yellow": (230, 200, 40), "purple": (130, 50, 160)}  # fmt: skip
SHAPES = ("circle", "square", "triangle")
QUERIES_PER_TOPIC = 2
SIZE = 48


def draw(shape: str | None, colour: tuple[int, int, int], rng: random.Random) -> bytes:
    """A small PNG: ``shape`` in ``colour`` on white, or (None) a grey stripe pattern."""
    image = Image.new("RGB", (SIZE, SIZE), (255, 255, 255))
    pen = ImageDraw.Draw(image)
    box = (8, 8, SIZE - 8, SIZE - 8)
    if shape is None:
        for x in range(0, SIZE, rng.randint(4, 9)):
            pen.line((x, 0, x, SIZE), fill=(150, 150, 150), width=2)
    elif shape == "circle":
        pen.ellipse(box, fill=colour)
    elif shape == "square":
        pen.rectangle(box, fill=colour)
    else:
        pen.polygon([(SIZE // 2, 8), (SIZE - 8, SIZE - 8), (8, SIZE - 8)], fill=colour)
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def _image(root: Path, name: str, data: bytes, score: int, caption: str) -> dict[str, object]:
    (root / "images" / name).write_bytes(data)
    return {"file": f"images/{name}", "score": score, "caption": caption}


def write_split(root: Path, seed: int) -> None:
    rng = random.Random(seed)
    (root / "images").mkdir(parents=True, exist_ok=True)
    lines = []
    for topic in TOPICS:
        for number in range(QUERIES_PER_TOPIC):
            query_id = f"{topic}-{number}"
            colour = rng.choice(sorted(COLOURS))
            shape = rng.choice(SHAPES)
            thing = f"{colour} {shape} of {topic}"
            pages = []
            for page in range(rng.randint(2, 3)):
                images = []
                for i in range(rng.randint(1, 2)):
                    relevant = rng.random() < 0.6
                    score = rng.randint(8, 10) if relevant else rng.randint(0, 5)
                    data = draw(shape if relevant else None, COLOURS[colour], rng)
                    caption = f"a {thing}" if relevant else "a grey striped pattern"
                    name = f"{query_id}-p{page}-{i}.png"
                    images.append(_image(root, name, data, score, caption))
                text = (f"The {thing} is a {colour} {shape}. Page {page} says it appears in "
                        f"{topic} and is known for its {colour} colour.")  # fmt: skip
                pages.append({"title": f"About the {thing} ({page})", "text": text,
                              "images": images})  # fmt: skip
            extra = [_image(root, f"{query_id}-x.png", draw(shape, COLOURS[colour], rng),
                            rng.randint(6, 9), f"another {thing}")]  # fmt: skip
            record = {"query_id": query_id, "query": f"What does the {thing} look like?",
                      "topic": topic, "pages": pages, "extra_images": extra}  # fmt: skip
            lines.append(json.dumps(record) + "\n")
    (root / "queries.jsonl").write_text("".join(lines), encoding="utf-8")


def write_sample(out_dir: str | Path, seed: int = 0) -> None:
    write_split(Path(out_dir) / "validation", seed)
