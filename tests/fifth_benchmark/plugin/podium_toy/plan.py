"""The toy's agent plan: each question a one-turn conversation of its own, sent as ``turns``
(no ``protocol`` field), so any agent of the kit (``agentkit``) answers it."""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence
from pathlib import Path
from typing import Any

from agentkit.protocol import clip_batch_size
from evaluator.seam.agent_plan import (
    AgentPlan,
    BatchRefused,
    Reply,
    RequestContext,
    cap_text,
    in_batches,
)

from .items import Question, Split


class QuestionPlan(AgentPlan[Question]):
    def __init__(self, split: Split) -> None:
        self.questions = split.questions
        regions: dict[str, list[str]] = {}
        for question in self.questions:
            regions.setdefault(question.region, []).append(question.id)
        self.places = {
            key: (region, index)
            for region, keys in regions.items()
            for index, key in enumerate(keys)
        }

    def keys(self) -> list[str]:
        return [question.id for question in self.questions]

    def batches(self, batch_size: int, answered: Collection[str]) -> Iterator[list[Question]]:
        left = [question for question in self.questions if question.id not in answered]
        return in_batches(left, clip_batch_size(batch_size))

    def key(self, ref: Question) -> str:
        return ref.id

    def place(self, ref: Question) -> tuple[str, int]:
        return self.places[ref.id]

    def image_files(self, ref: Question) -> Sequence[Path]:
        return ()

    def requests(
        self, batch: Sequence[Question], paths: Sequence[Sequence[str]], context: RequestContext
    ) -> dict[str, Any]:
        return {
            "turns": [
                {
                    "session_id": question.id,
                    "interaction_id": question.id,
                    "turn_idx": 0,
                    "query": question.question,
                    "image_path": None,
                    "message_history": [],
                }
                for question in batch
            ]
        }

    def read_replies(
        self, batch: Sequence[Question], responses: list[Any], cap: int
    ) -> list[Reply]:
        if not all(isinstance(response, str) for response in responses):
            raise BatchRefused("/batch: every response must be a string")
        return [Reply(cap_text(response, cap)) for response in responses]
