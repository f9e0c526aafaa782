"""The toy's generated sample (``python -m evaluator sample --protocol toy``): a ``validation``
split of twelve capitals in three regions, and made-up predictions for it."""

from __future__ import annotations

import json
import random
from pathlib import Path

from .items import QUESTIONS, Split

CAPITALS = {
    "europe": {"France": "Paris", "Germany": "Berlin", "Italy": "Rome", "Portugal": "Lisbon"},
    "asia": {"Japan": "Tokyo", "India": "New Delhi", "Thailand": "Bangkok", "Nepal": "Kathmandu"},
    "americas": {"Canada": "Ottawa", "Brazil": "Brasília", "Peru": "Lima", "Chile": "Santiago"},
}


def write_sample(out_dir: str | Path) -> Path:
    root = Path(out_dir) / "validation"
    root.mkdir(parents=True, exist_ok=True)
    lines = [
        {"id": f"q{index:02d}", "region": region, "question": f"What is the capital of {country}?",
         "reference": capital}
        for index, (region, country, capital) in enumerate(
            (region, country, capital)
            for region, countries in CAPITALS.items()
            for country, capital in countries.items()
        )
    ]  # fmt: skip
    (root / QUESTIONS).write_text("".join(json.dumps(line) + "\n" for line in lines), "utf-8")
    return root


def write_sample_predictions(split: Split, path: str | Path, seed: int) -> None:
    """A third right, a third wrong (another question's capital), a third "I don't know"."""
    order = list(range(len(split.questions)))
    random.Random(seed).shuffle(order)
    kinds = {index: position % 3 for position, index in enumerate(order)}
    lines = []
    for index, question in enumerate(split.questions):
        other = split.questions[(index + 1) % len(split.questions)].reference
        answer = (question.reference, other, "I don't know")[kinds[index]]
        lines.append(json.dumps({"id": question.id, "answer": answer}) + "\n")
    Path(path).write_text("".join(lines), "utf-8")
