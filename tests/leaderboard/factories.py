"""Scores dicts shaped like the evaluator's, for tests that need many entries quickly."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from PIL import Image

from evaluator.benchmarks.crag_mm.records import Conversation, Turn
from evaluator.benchmarks.crag_mm.split import write_split


def block(truthfulness: float | None, turns: int = 20, **overrides: Any) -> dict[str, Any]:
    """A metric block shaped like the evaluator's, consistent with ``truthfulness``."""
    if truthfulness is None:
        rates: dict[str, Any] = dict.fromkeys(
            (
                "accuracy",
                "exact_match",
                "missing",
                "hallucination_rate",
                "truthfulness_turn",
                "truthfulness",
                "early_stop_rate",
                "avg_successful_turns",
            ),
        )
        rates["truthfulness_ci95"] = None
    else:
        accuracy = (1 + truthfulness) / 2 * 0.8
        hallucination = accuracy - truthfulness
        rates = {
            "accuracy": accuracy,
            "exact_match": accuracy / 2,
            "missing": 1 - accuracy - hallucination,
            "hallucination_rate": hallucination,
            "truthfulness_turn": truthfulness,
            "truthfulness": truthfulness,
            "early_stop_rate": 0.25,
            "avg_successful_turns": 1.5,
            "truthfulness_ci95": [truthfulness - 0.1, truthfulness + 0.1],
        }
    result = {
        "turns": turns,
        "conversations": turns // 2,
        "correct": 0,
        "correct_exact": 0,
        "miss": 0,
        "hallucination": 0,
        "unjudged": 0,
        **rates,
    }
    result.update(overrides)
    return result


def scores_dict(truthfulness: float | None, slices: dict | None = None) -> dict[str, Any]:
    return {
        "counting": "paper",
        "complete": truthfulness is not None,
        "unjudged": 0 if truthfulness is not None else 3,
        "all": block(truthfulness),
        "ego": block(truthfulness, turns=8),
        "slices": slices
        if slices is not None
        else {
            "domain": {"food": block(truthfulness, turns=12), "vehicle": block(0.0, turns=8)},
            "turn_idx": {"0": block(0.5, turns=10), "1": block(-0.2, turns=10)},
        },
    }


def write_small_split(out: Path, conversations: int = 3) -> Path:
    """A valid split directory in Podium's format, written by the evaluator itself."""
    image = io.BytesIO()
    Image.new("RGB", (8, 8), (200, 30, 30)).save(image, format="JPEG")
    items = []
    for c in range(conversations):
        turns = tuple(
            Turn(
                interaction_id=f"s{c}-t{t}",
                query=f"What is shown, part {t}?",
                ground_truth=f"answer {c}.{t}",
                labels={
                    "domain": "food",
                    "query_category": "simple-recognition",
                    "dynamism": "static",
                    "image_quality": "normal",
                },
            )
            for t in range(2)
        )
        ego = c % 2 == 0
        items.append(
            (
                Conversation(
                    session_id=f"s{c}",
                    image=f"images/s{c}.jpg",
                    image_url=None if ego else f"https://example.org/{c}.jpg",
                    turns=turns,
                ),
                image.getvalue(),
            )
        )
    write_split(items, out)
    return out
