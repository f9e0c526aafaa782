"""The toy benchmark's agent (kit A): it knows some capitals, gets one wrong and says it does
not know the rest. On the toy's sample: 9 right, 1 wrong (Canada), 2 "I don't know"."""

from __future__ import annotations

import re
from typing import Any

KNOWN = {
    "France": "Paris", "Germany": "Berlin", "Italy": "Rome", "Portugal": "Lisbon",
    "Japan": "Tokyo", "India": "New Delhi", "Thailand": "Bangkok",
    "Canada": "Toronto", "Brazil": "Brasilia", "Peru": "Lima",
}  # fmt: skip


class CapitalsAgent:
    def __init__(self, search_pipeline: Any = None) -> None:
        self.search_pipeline = search_pipeline

    def get_batch_size(self) -> int:
        return 4

    def batch_generate_response(
        self, queries: list[str], images: list[Any], message_histories: list[list[dict[str, str]]]
    ) -> list[str]:
        answers = []
        for query in queries:
            found = re.search(r"capital of (.+?)\?", query)
            answers.append(KNOWN.get(found.group(1) if found else "", "I don't know"))
        return answers
