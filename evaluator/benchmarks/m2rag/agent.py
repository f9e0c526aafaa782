"""What an M2RAG agent is sent, and how its reply becomes a stored answer.

Per item (protocol v3 ``items``): ``{"item_id": <query_id>, "query", "pages": [{"title",
"text", "images": [{"index", "path", "caption"}]}], "extra_images": [{"index", "path",
"caption"}]}``; image indices run from 0 over the pages' images then the extra images. The
stored relevance scores never go to the agent. A reply is ``{"answer": <markdown>}``; one that
breaks this, or is longer than ``MAX_ANSWER_CHARS``, is the item's problem in Podium's words
and counts as a failed answer.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterator, Sequence
from pathlib import Path
from typing import Any

from evaluator.benchmarks.m2rag.items import M2Image, M2Prediction, M2Query, M2Split
from evaluator.seam.agent_plan import AgentPlan, Reply, RequestContext, in_batches

MAX_ANSWER_CHARS = 32768  # the answer reaches the judge prompts


def read_response(query_id: str, response: object) -> tuple[M2Prediction, str | None]:
    """The prediction a reply makes, and the problem when it breaks the schema."""
    answer = response.get("answer") if isinstance(response, dict) else None
    if not isinstance(answer, str):
        return M2Prediction(query_id, "", True), 'the reply is not {"answer": <markdown text>}'
    if len(answer) > MAX_ANSWER_CHARS:
        problem = f"the answer has {len(answer)} characters, more than {MAX_ANSWER_CHARS}"
        return M2Prediction(query_id, "", True), problem
    return M2Prediction(query_id, answer, False), None


def stored_reply(prediction: M2Prediction) -> str:
    return json.dumps({"answer": prediction.answer, "failed": prediction.failed})


def stored_prediction(query_id: str, response: str) -> M2Prediction:
    """A stored reply read back; anything else is a failed answer."""
    try:
        data = json.loads(response)
    except ValueError:
        data = None
    if isinstance(data, dict) and data.get("failed") is True:
        return M2Prediction(query_id, "", True)
    return read_response(query_id, data)[0]


def _images(images: Sequence[M2Image], first: int, paths: Sequence[str]) -> list[dict[str, Any]]:
    return [
        {"index": first + i, "path": path, "caption": image.caption}
        for i, (image, path) in enumerate(zip(images, paths, strict=True))
    ]


class QueryPlan(AgentPlan[M2Query]):
    """Every query of the split, in order."""

    benchmark = "m2rag"

    def __init__(self, split: M2Split) -> None:
        self.split = split
        self.positions = {query.query_id: i for i, query in enumerate(split.queries)}

    def keys(self) -> list[str]:
        return [query.query_id for query in self.split.queries]

    def batches(self, batch_size: int, answered: Collection[str]) -> Iterator[list[M2Query]]:
        left = [query for query in self.split.queries if query.query_id not in answered]
        return in_batches(left, batch_size)

    def key(self, ref: M2Query) -> str:
        return ref.query_id

    def place(self, ref: M2Query) -> tuple[str, int]:
        return ref.topic, self.positions[ref.query_id]

    def image_files(self, ref: M2Query) -> Sequence[Path]:
        return [self.split.image_path(image) for image in ref.images]

    def requests(
        self, batch: Sequence[M2Query], paths: Sequence[Sequence[str]], context: RequestContext
    ) -> dict[str, Any]:
        items = []
        for query, files in zip(batch, paths, strict=True):
            pages, first = [], 0
            for page in query.pages:
                shown = _images(page.images, first, files[first : first + len(page.images)])
                pages.append({"title": page.title, "text": page.text, "images": shown})
                first += len(page.images)
            extra = _images(query.extra_images, first, files[first:])
            items.append({"item_id": query.query_id, "query": query.query, "pages": pages,
                          "extra_images": extra})  # fmt: skip
        return {"protocol": self.benchmark, "items": items}

    def read_replies(self, batch: Sequence[M2Query], responses: list[Any], cap: int) -> list[Reply]:
        replies = []
        for query, response in zip(batch, responses, strict=True):
            prediction, problem = read_response(query.query_id, response)
            replies.append(Reply(stored_reply(prediction), problem))
        return replies
