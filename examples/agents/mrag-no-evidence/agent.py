"""An MRAG-Suite agent that ignores the evidence: the same confident answer to every question,
whatever was retrieved (a baseline for the claim diagnosis: its claims are entailed by
nothing it was given)."""

from __future__ import annotations

from typing import Any


class NoEvidenceAgent:
    def get_batch_size(self) -> int:
        return 8

    def batch_answer(self, items: list[Any]) -> list[dict[str, str]]:
        return [
            {"short_answer": "20 million", "long_answer": "Revenue was 20 million that year."}
            for _ in items
        ]
