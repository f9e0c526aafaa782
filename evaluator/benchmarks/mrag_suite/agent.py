"""What an MRAG-Suite agent is sent in one retrieval mode, and how its reply is stored.

One run per mode: every item of the split in the split's order, sent as protocol v3 ``items``
(``"protocol": "mrag-suite"``)::

    {"item_id": "GPD/q17", "mode": "GPD", "question": str,
     "images": [{"id": str, "path": "/podium/images/..."}], "passages": [{"id": str, "text": str}]}

what the mode retrieves (``modes.retrieved``), never which items are gold and never the images'
captions (the checker's, not the agent's). The reply is ``{"short_answer", "long_answer"}``;
one that breaks it is stored as an empty answer with the problem in Podium's words.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evaluator.benchmarks.mrag_suite.items import Evidence, MragSplit
from evaluator.benchmarks.mrag_suite.modes import (
    COUNTINGS,
    answer_key,
    read_answer,
    retrieved,
    stored_answer,
)
from evaluator.seam.agent_plan import ListedPlan, Reply, RequestContext


@dataclass(frozen=True)
class AgentItem:
    key: str  # "<mode>/<item_id>"
    item_id: str
    mode: str
    question: str
    retrieved: tuple[Evidence, ...]

    @property
    def images(self) -> list[Evidence]:
        return [entry for entry in self.retrieved if entry.modality == "image"]


class ModePlan(ListedPlan[AgentItem]):
    """One run: every item of ``split`` in ``mode`` at ``depth`` (with ``counting``'s
    retrieval), in the split's order."""

    benchmark = "mrag-suite"

    def __init__(
        self, split: MragSplit, mode: str, depth: tuple[int, int], counting: str = COUNTINGS[0]
    ) -> None:
        self.split = split
        asked = [
            AgentItem(answer_key(mode, item.item_id), item.item_id, mode, item.question,
                      tuple(retrieved(item, mode, depth, counting)))
            for item in split.items
        ]  # fmt: skip
        super().__init__(asked, mode)

    def key(self, ref: AgentItem) -> str:
        return ref.key

    def image_files(self, ref: AgentItem) -> Sequence[Path]:
        return [self.split.root / entry.file for entry in ref.images]

    def requests(
        self, batch: Sequence[AgentItem], paths: Sequence[Sequence[str]], context: RequestContext
    ) -> dict[str, Any]:
        items = []
        for item, files in zip(batch, paths, strict=True):
            images = [
                {"id": e.evidence_id, "path": p} for e, p in zip(item.images, files, strict=True)
            ]
            passages = [
                {"id": e.evidence_id, "text": e.content}
                for e in item.retrieved
                if e.modality == "text"
            ]
            items.append({"item_id": item.key, "mode": item.mode, "question": item.question,
                          "images": images, "passages": passages})  # fmt: skip
        return {"protocol": self.benchmark, "items": items}

    def read_replies(
        self, batch: Sequence[AgentItem], responses: list[Any], cap: int
    ) -> list[Reply]:
        read = (read_answer(i.item_id, i.mode, r) for i, r in zip(batch, responses, strict=True))
        return [Reply(stored_answer(answer), problem) for answer, problem in read]
