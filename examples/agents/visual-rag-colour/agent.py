"""A Visual-RAG agent with no model: colour retrieval with Pillow alone.

Each image's saturated pixels (HSV saturation >= 128 and value >= 90) are binned by the nearest
named hue. A hue found in at least 80 % of the images looked at is the species' body, not the
asked feature, and is ignored (with three images or more). Candidates are ranked by how many
feature-coloured pixels they show; the answer is the hue most of the best three images show.
Questions that do not ask for a colour get "I don't know" (the ranking is still given).
"""

from __future__ import annotations

import colorsys
from typing import Any

from PIL import Image, ImageChops

HUES = {  # name -> RGB, named as annotators would
    "red": (220, 30, 35),
    "orange": (240, 130, 20),
    "yellow": (245, 225, 20),
    "green": (40, 170, 60),
    "turquoise": (20, 195, 185),
    "blue": (35, 85, 230),
    "violet": (140, 55, 225),
    "pink": (235, 65, 170),
}
_CENTRES = {
    name: colorsys.rgb_to_hsv(*(c / 255 for c in rgb))[0] * 255 for name, rgb in HUES.items()
}


def colour_counts(image: Image.Image) -> dict[str, int]:
    """Saturated pixels per named hue."""
    hue, saturation, value = image.convert("RGB").convert("HSV").split()
    mask = ImageChops.multiply(
        saturation.point(lambda s: 255 if s >= 128 else 0),
        value.point(lambda v: 255 if v >= 90 else 0),
    )
    histogram = hue.histogram(mask=mask)
    counts = dict.fromkeys(HUES, 0)
    for level, count in enumerate(histogram):
        if count:
            nearest = min(
                _CENTRES,
                key=lambda n: min(abs(level - _CENTRES[n]), 256 - abs(level - _CENTRES[n])),
            )
            counts[nearest] += count
    return counts


def asks_colour(question: str) -> bool:
    lowered = question.lower()
    return "colour" in lowered or "color" in lowered


class ColourAgent:
    def get_batch_size(self) -> int:
        return 4

    def batch_answer(self, items: list[Any]) -> list[dict[str, Any]]:
        return [self.answer(item) for item in items]

    def answer(self, item: Any) -> dict[str, Any]:
        looked = [(given.id, given.image) for given in item.images]
        if not looked:
            looked = [(candidate.id, candidate.open()) for candidate in item.candidates]
        counts = {image_id: colour_counts(image) for image_id, image in looked}
        if len(counts) >= 3:
            for name in HUES:
                if sum(c[name] >= 20 for c in counts.values()) >= 0.8 * len(counts):
                    for found in counts.values():
                        found[name] = 0
        ranking = sorted(counts, key=lambda image_id: -sum(counts[image_id].values()))
        if item.k is not None:
            ranking = ranking[: item.k]
        votes: dict[str, float] = {}
        for weight, image_id in zip((1.5, 1.0, 1.0), ranking[:3], strict=False):
            found = counts[image_id]
            if sum(found.values()):
                name = max(found, key=lambda n: found[n])
                votes[name] = votes.get(name, 0.0) + weight
        if not asks_colour(item.question) or not votes:
            return {"answer": "I don't know", "ranking": ranking}
        return {"answer": max(votes, key=lambda n: votes[n]), "ranking": ranking}
