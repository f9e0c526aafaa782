"""What a Visual-RAG agent is sent in each setting, and how its reply becomes a prediction.

The benchmark builds every setting's agent input from the gold data; the gold itself (which
candidates are clues, the answers) never goes into the request. Per query, one clue and an
order of the non-clues are drawn once (seeded by the task's seed and the query id), so the
settings are nested and comparable, as gCUE needs:

- ``zero_shot``: no image; ``gt_clue``: that clue; ``non_clue``: the first non-clue;
- ``one_in_<k>``: the clue first, then the first k - 1 non-clues (the paper's order; fewer when
  the query has fewer non-clues);
- ``topk_<k>`` and ``retrieval``: no given image, every candidate (in the split's order) to
  search; ``k`` tells top-k how many to use; ``retrieval`` must return a ranking.

A reply is ``{"answer": str, "ranking": [image id]}``. One that breaks this gets an error in
Podium's words (never the agent's bytes) and counts as no answer for that item; the rest of the
batch and the run go on.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentkit.visual_rag_reply import MAX_ANSWER_CHARS, reply_problem
from evaluator.benchmarks.visual_rag.items import (
    VisualPrediction,
    VisualQuery,
    VisualSplit,
    prediction_key,
)
from evaluator.seam.agent_plan import ListedPlan, Reply, RequestContext

_PODIUM_WORDS = {
    "not-object": "the response is not an object {answer, ranking}",
    "answer-type": "the response's answer is not a string",
    "answer-length": f"the response's answer is longer than {MAX_ANSWER_CHARS} characters",
    "no-ranking": "the retrieval setting needs a ranking",
    "ranking-type": "the response's ranking is not a list of image ids",
}
MAX_RANKING = 100  # ranking entries kept (scored at k <= 30; the rest is storage, not score)
MAX_IMAGE_ID_CHARS = 200  # of a ranking entry kept (a candidate's id is a guid)
_K = re.compile(r"(?:topk|one_in)_(\d+)")


@dataclass(frozen=True)
class AgentItem:
    """One (setting, query) as the agent sees it: image ids (the runner adds their paths)."""

    item_id: str  # "<setting>/<query_id>"
    setting: str
    question: str
    images: tuple[str, ...]  # given by the setting, in order
    candidates: tuple[str, ...]  # to search (retrieval, top-k)
    k: int | None


def given_images(query: VisualQuery, setting: str, seed: int = 0) -> tuple[str, ...]:
    """The images ``setting`` gives for ``query`` (see the module doc)."""
    rng = random.Random(f"{seed}:{query.query_id}")
    clue = rng.choice(sorted(query.clues))
    others = [image for image in query.candidates if image not in query.clues]
    rng.shuffle(others)
    match = _K.fullmatch(setting)
    if setting == "gt_clue":
        return (clue,)
    if setting == "non_clue":
        return tuple(others[:1])
    if setting.startswith("one_in_") and match:
        return (clue, *others[: int(match.group(1)) - 1])
    return ()


def agent_item(query: VisualQuery, setting: str, seed: int = 0) -> AgentItem:
    match = _K.fullmatch(setting)
    searches = setting == "retrieval" or setting.startswith("topk_")
    return AgentItem(
        item_id=prediction_key(setting, query.query_id),
        setting=setting,
        question=query.question,
        images=given_images(query, setting, seed),
        candidates=query.candidates if searches else (),
        k=int(match.group(1)) if match and setting.startswith("topk_") else None,
    )


def read_response(item: AgentItem, response: Any) -> tuple[VisualPrediction, str | None]:
    """The prediction an agent's reply makes, and the protocol error when it breaks the schema
    (the prediction is then an empty answer: no answer)."""
    query_id = item.item_id.split("/", 1)[1]
    error = _problem(item, response)
    if error is not None:
        return VisualPrediction(query_id, item.setting, "", () if _ranks(item) else None), error
    ranking = response.get("ranking")
    kept = (
        tuple(image[:MAX_IMAGE_ID_CHARS] for image in ranking[:MAX_RANKING])
        if ranking is not None and _ranks(item)
        else None
    )
    return VisualPrediction(query_id, item.setting, response.get("answer", ""), kept), None


def _ranks(item: AgentItem) -> bool:
    return item.setting == "retrieval"


def _problem(item: AgentItem, response: Any) -> str | None:
    """The reply's problem (``agentkit.visual_rag_reply``, the check agentkit makes too) in
    Podium's words: they never quote the agent's bytes."""
    problem = reply_problem(response, item.setting)
    if problem is None:
        return None
    if problem.kind == "unknown-fields":
        return f"the response has {len(problem.unknown)} field(s) other than answer and ranking"
    return _PODIUM_WORDS[problem.kind]


def stored_reply(prediction: VisualPrediction) -> str:
    """A prediction as the server stores it (``Benchmark.stored_prediction`` reads it back)."""
    reply: dict[str, Any] = {"answer": prediction.answer}
    if prediction.ranking is not None:
        reply["ranking"] = list(prediction.ranking)
    return json.dumps(reply, ensure_ascii=False)


class SettingPlan(ListedPlan[AgentItem]):
    """One run: every query of ``split`` in ``setting``, in the split's order, sent as benchmark
    v3 ``items`` (``agentkit.items``)."""

    benchmark = "visual-rag"

    def __init__(self, split: VisualSplit, setting: str, seed: int = 0) -> None:
        self.split = split
        super().__init__([agent_item(query, setting, seed) for query in split.queries], setting)

    def key(self, ref: AgentItem) -> str:
        return ref.item_id

    def image_files(self, ref: AgentItem) -> Sequence[Path]:
        return [self.split.image_path(image) for image in (*ref.images, *ref.candidates)]

    def candidates(self, ref: AgentItem) -> Sequence[tuple[str, Path]]:
        return [(image, self.split.image_path(image)) for image in ref.candidates]

    def requests(
        self, batch: Sequence[AgentItem], paths: Sequence[Sequence[str]], context: RequestContext
    ) -> dict[str, Any]:
        items = []
        for item, files in zip(batch, paths, strict=True):
            given = len(item.images)
            items.append(
                {
                    "item_id": item.item_id,
                    "setting": item.setting,
                    "question": item.question,
                    "images": _images(item.images, files[:given]),
                    "candidates": _images(item.candidates, files[given:]),
                    "k": item.k,
                }
            )
        return {"protocol": self.benchmark, "items": items}

    def read_replies(
        self, batch: Sequence[AgentItem], responses: list[Any], cap: int
    ) -> list[Reply]:
        replies = []
        for item, response in zip(batch, responses, strict=True):
            prediction, problem = read_response(item, response)
            replies.append(Reply(stored_reply(prediction), problem))
        return replies


def _images(ids: Sequence[str], paths: Sequence[str]) -> list[dict[str, str]]:
    return [{"id": image, "path": path} for image, path in zip(ids, paths, strict=True)]
