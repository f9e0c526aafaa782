"""A small MRAG-Suite split written for tests: two items, gold and distractors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

PIXEL = bytes.fromhex(  # a 1x1 PNG
    "89504e470d0a1a0a0000000d4948445200000001000000010802000000907753de0000000c4944415408d763"
    "f8cfc000000301010018dd8db00000000049454e44ae426082"
)


def record(name: str = "q1", **changes: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "item_id": name,
        "question": "What was the revenue in 2021?",
        "short_answer": "12 million",
        "long_answer": "Revenue reached 12 million in 2021. The chart shows growth.",
        "evidence_imgs": [{"id": "chart", "file": "images/chart.png", "caption": "revenue chart"}],
        "evidence_txts": [{"id": "p1", "text": "Revenue reached 12 million in 2021."}],
        "distractor_imgs": ["images/d1.png", "images/d2.png"],
        "distractor_txts": [
            {"id": "x1", "text": "Costs fell in 2019."},
            {"id": "x2", "text": "Revenue reached 12 million in 2021."},
            {"id": "x3", "text": "The firm hired staff."},
        ],
        "source": "chartqa",
        "variant": "filtered",
        "ambiguity": "clear",
    }
    return row | changes


def write_split(root: Path, rows: list[dict[str, Any]]) -> Path:
    (root / "images").mkdir(parents=True, exist_ok=True)
    for name in ("chart", "d1", "d2"):
        (root / "images" / f"{name}.png").write_bytes(PIXEL)
    (root / "items.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    return root
