"""A generated MRAG-Suite sample: made-up companies' bar charts and slides drawn with Pillow,
short passages, and a distractor pool per item (the other companies' charts, slides and
passages). ``OUT/validation/`` is a split (``items.jsonl``, ``images/``).

Every item asks a figure of one company in one year; its gold is that company's chart (with
a caption the claim checker reads) and a passage stating the figure; its labels cycle through
the sources (``chartqa``, ``slidevqa``), the variants and the ambiguity split.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from PIL import Image, ImageDraw

from evaluator.staging import staged_directory

COMPANIES = ("Acme", "Borealis", "Cobalt", "Dunmore", "Elmwood", "Fenwick", "Garnet", "Halcyon")
YEARS = (2019, 2020, 2021)
SPLIT = "validation"


def _figures(rng: random.Random) -> dict[str, list[int]]:
    return {name: [rng.randint(3, 40) for _ in YEARS] for name in COMPANIES}


def draw_chart(values: list[int], title: str) -> Image.Image:
    """A bar chart: one bar per year, its value written above it."""
    image = Image.new("RGB", (240, 160), "white")
    draw = ImageDraw.Draw(image)
    draw.text((8, 4), title, fill="black")
    for index, (year, value) in enumerate(zip(YEARS, values, strict=True)):
        left, top = 30 + index * 70, 140 - value * 3
        draw.rectangle((left, top, left + 40, 140), fill=(60, 110 + index * 40, 200))
        draw.text((left + 8, top - 12), str(value), fill="black")
        draw.text((left + 4, 144), str(year), fill="black")
    return image


def draw_slide(title: str, bullets: list[str]) -> Image.Image:
    """A slide: a title bar and bullet lines."""
    image = Image.new("RGB", (240, 160), (245, 245, 235))
    draw = ImageDraw.Draw(image)
    draw.rectangle((0, 0, 240, 24), fill=(30, 60, 90))
    draw.text((8, 6), title, fill="white")
    for index, bullet in enumerate(bullets):
        draw.text((12, 34 + index * 18), f"- {bullet}", fill="black")
    return image


def _item(
    index: int, name: str, figures: dict[str, list[int]], rng: random.Random
) -> dict[str, Any]:
    year_index = index % len(YEARS)
    year, value = YEARS[year_index], figures[name][year_index]
    others = [other for other in COMPANIES if other != name]
    rng.shuffle(others)
    fact = f"{name} revenue was {value} million in {year}."

    def chart(company: str) -> dict[str, str]:
        series = ", ".join(f"{y} {v} million" for y, v in zip(YEARS, figures[company], strict=True))
        return {"id": f"chart-{company.lower()}", "file": f"images/chart-{company.lower()}.png",
                "caption": f"Bar chart of {company} revenue: {series}."}  # fmt: skip

    def passage(company: str) -> dict[str, str]:
        v = figures[company][year_index]
        return {
            "id": f"txt-{company.lower()}",
            "text": f"{company} revenue was {v} million in {year}.",
        }

    return {
        "item_id": f"q{index:03d}",
        "question": f"What was the revenue of {name} in {year}?",
        "short_answer": f"{value} million",
        "long_answer": f"{fact} The chart shows {name} revenue per year.",
        "evidence_imgs": [chart(name)],
        "evidence_txts": [passage(name)],
        "distractor_imgs": [
            *(chart(o) for o in others[:3]),
            {
                "id": f"slide-{others[3].lower()}",
                "file": f"images/slide-{others[3].lower()}.png",
                "caption": f"Slide: {others[3]} hired new staff.",
            },
        ],
        "distractor_txts": [passage(o) for o in others[4:7]],
        "source": ("chartqa", "slidevqa")[index % 2],
        "variant": ("filtered", "full")[index // 2 % 2],
        "ambiguity": ("clear", "clear", "ambiguous")[index % 3],
    }


def write_split(root: Path, seed: int = 0, items: int = 12) -> None:
    rng = random.Random(seed)
    figures = _figures(rng)
    (root / "images").mkdir(parents=True)
    for name in COMPANIES:
        draw_chart(figures[name], f"{name} revenue (million)").save(
            root / "images" / f"chart-{name.lower()}.png"
        )
        draw_slide(f"{name} update", [f"{name} hired new staff.", "Offices: 3"]).save(
            root / "images" / f"slide-{name.lower()}.png"
        )
    rows = [_item(index, COMPANIES[index % len(COMPANIES)], figures, rng) for index in range(items)]
    (root / "items.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows), "utf-8")


def write_sample(out_dir: str | Path, seed: int = 0) -> None:
    with staged_directory(out_dir) as staging:
        write_split(staging / SPLIT, seed)
