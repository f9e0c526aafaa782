"""Protocol v3 items: a ``POST /batch`` for a benchmark other than CRAG-MM carries ``items``.

Visual-RAG (``"protocol": "visual-rag"``) sends, per item::

    {"item_id": "gt_clue/q17", "setting": "gt_clue", "question": str,
     "images": [{"id": str, "path": "/podium/images/..."}],      # what the setting gives
     "candidates": [{"id": str, "path": ...}],                    # retrieval and top-k only
     "k": int | null}                                             # top-k: how many to use

and the agent answers one ``{"answer": str, "ranking": [image id, ...]}`` per item (the ranking
is required in the ``retrieval`` setting, ignored elsewhere). MRAG-Suite
(``"protocol": "mrag-suite"``) sends, per item::

    {"item_id": "GPD/q17", "mode": "GPD", "question": str,
     "images": [{"id": str, "path": ...}], "passages": [{"id": str, "text": str}]}

what the retrieval mode retrieved, and the agent answers one
``{"short_answer": str, "long_answer": str}`` per item. The given images are opened
lazily like a turn's; candidates (a few hundred per query) are only opened when the agent asks
(``CandidateImage.open``).
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from typing import Any

from PIL import Image

from agentkit.image_files import BatchFiles
from agentkit.image_open import open_image_file
from agentkit.m2rag_items import M2RAGItem, M2RAGItemError, m2rag_problem, parse_m2rag_item
from agentkit.visual_rag_reply import MAX_ANSWER_CHARS, reply_problem

ITEM_PROTOCOLS = ("visual-rag", "mrag-suite", "m2rag")  # M2RAG's: ``agentkit.m2rag_items``
# A Visual-RAG reply's problem (``agentkit.visual_rag_reply``) as the agent's log says it.
_AGENT_WORDS = {
    "not-object": "must be a dict with a str 'answer'",
    "answer-type": "must be a dict with a str 'answer'",
    "answer-length": f"'answer' is longer than {MAX_ANSWER_CHARS} characters",
    "no-ranking": "needs a 'ranking' (retrieval setting)",
    "ranking-type": "'ranking' must be a list of str",
}


class ItemError(ValueError):
    """An item breaks the protocol; the message names the field (``items[2].images[0].id``)."""


@dataclass(frozen=True)
class CandidateImage:
    id: str
    path: str

    def open(self) -> Image.Image:
        """The image, its pixels not decoded yet (the file is read whole first)."""
        return open_image_file(self.path, f"candidate {self.id}")


@dataclass(frozen=True)
class GivenImage:
    id: str
    image: Image.Image


@dataclass(frozen=True)
class VisualRAGItem:
    item_id: str
    setting: str
    question: str
    images: list[GivenImage]
    candidates: list[CandidateImage]
    k: int | None


@dataclass(frozen=True)
class Passage:
    id: str
    text: str


@dataclass(frozen=True)
class MragSuiteItem:
    item_id: str
    mode: str  # GO, GPD or DO: what was retrieved
    question: str
    images: list[GivenImage]
    passages: list[Passage]


Item = VisualRAGItem | MragSuiteItem | M2RAGItem


def parse_items(protocol: Any, items: list[Any], files: BatchFiles) -> list[Item]:
    """The ``items`` of a batch for ``protocol``, their images mapped for ``files``."""
    if protocol not in ITEM_PROTOCOLS:
        raise ItemError(f"protocol must be one of {ITEM_PROTOCOLS} with items, got {protocol!r}")
    if protocol == "m2rag":
        try:
            return [parse_m2rag_item(item, f"items[{i}]", files) for i, item in enumerate(items)]
        except M2RAGItemError as exc:
            raise ItemError(str(exc)) from None
    parse = _item if protocol == "visual-rag" else _mrag_item
    return [parse(item, f"items[{i}]", files) for i, item in enumerate(items)]


def _given(item: dict[str, Any], where: str, files: BatchFiles) -> list[GivenImage]:
    return [
        GivenImage(image_id, open_image_file(path, f"{where}.images[{j}].path", files))
        for j, (image_id, path) in enumerate(_images(item, "images", where))
    ]


def _mrag_item(item: Any, where: str, files: BatchFiles) -> MragSuiteItem:
    if not isinstance(item, dict):
        raise ItemError(f"{where} must be an object")
    passages = item.get("passages", [])
    if not isinstance(passages, list):
        raise ItemError(f"{where}.passages must be a list")
    for j, entry in enumerate(passages):
        if not (
            isinstance(entry, dict) and all(isinstance(entry.get(k), str) for k in ("id", "text"))
        ):
            raise ItemError(f"{where}.passages[{j}] must be an object with string id and text")
    return MragSuiteItem(
        item_id=_text(item, "item_id", where),
        mode=_text(item, "mode", where),
        question=_text(item, "question", where),
        images=_given(item, where, files),
        passages=[Passage(entry["id"], entry["text"]) for entry in passages],
    )


def _item(item: Any, where: str, files: BatchFiles) -> VisualRAGItem:
    if not isinstance(item, dict):
        raise ItemError(f"{where} must be an object")
    k = item.get("k")
    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
        raise ItemError(f"{where}.k must be a positive integer or null, got {k!r}")
    images = _given(item, where, files)
    candidates = [CandidateImage(*pair) for pair in _images(item, "candidates", where)]
    return VisualRAGItem(
        item_id=_text(item, "item_id", where),
        setting=_text(item, "setting", where),
        question=_text(item, "question", where),
        images=images,
        candidates=candidates,
        k=k,
    )


def _text(item: dict[str, Any], key: str, where: str) -> str:
    value = item.get(key)
    if not isinstance(value, str):
        raise ItemError(f"{where}.{key} must be a string")
    return value


def _images(item: dict[str, Any], key: str, where: str) -> list[tuple[str, str]]:
    value = item.get(key, [])
    if not isinstance(value, list):
        raise ItemError(f"{where}.{key} must be a list")
    pairs = []
    for j, entry in enumerate(value):
        if not (isinstance(entry, dict) and isinstance(entry.get("id"), str)):
            raise ItemError(f"{where}.{key}[{j}] must be an object with a string id")
        path = entry.get("path")
        if not isinstance(path, str) or not os.path.isabs(path):
            raise ItemError(f"{where}.{key}[{j}].path must be an absolute file path")
        pairs.append((entry["id"], path))
    return pairs


def check_item_responses(responses: Any, items: list[Item]) -> list[Any]:
    """One response per item, or ``ValueError`` (the batch is refused: agentkit reports it as a
    protocol error). A response that breaks ``{"answer": str, "ranking": [str]}`` (MRAG-Suite:
    ``{"short_answer": str, "long_answer": str}``) costs its item only: agentkit says why on
    stderr (the agent's log) and sends it on as it is (``None`` when it is not JSON), and
    Podium scores that item as no answer, naming the problem on the run."""
    if not isinstance(responses, list | tuple) or len(responses) != len(items):
        got = (
            f"{len(responses)} responses"
            if isinstance(responses, list | tuple)
            else (type(responses).__name__)
        )
        raise ValueError(f"batch_answer returned {got}, expected a list of {len(items)} dicts")
    checked = []
    for i, (response, item) in enumerate(zip(responses, items, strict=True)):
        problem = _problem(response, item)
        if problem is None:
            checked.append(_plain(response))
            continue
        print(f"agentkit: batch_answer: response {i} ({item.item_id}): {problem}", file=sys.stderr)
        try:
            json.dumps(response)
        except (TypeError, ValueError):
            response = None
        checked.append(response)
    return checked


def _problem(response: Any, item: Item) -> str | None:
    if isinstance(item, M2RAGItem):
        return m2rag_problem(response)
    if isinstance(item, MragSuiteItem):
        return _mrag_problem(response)
    problem = reply_problem(response, item.setting)
    if problem is None:
        return None
    if problem.kind == "unknown-fields":
        return f"unknown key {problem.unknown[0]!r}"
    return _AGENT_WORDS[problem.kind]


def _mrag_problem(response: Any) -> str | None:
    fields = ("short_answer", "long_answer")
    if not isinstance(response, dict) or not all(isinstance(response.get(k), str) for k in fields):
        return "must be a dict with str 'short_answer' and 'long_answer'"
    unknown = sorted(set(response) - set(fields))
    return f"unknown key {unknown[0]!r}" if unknown else None


def _plain(response: dict[str, Any]) -> dict[str, Any]:
    if "short_answer" in response:
        return {"short_answer": response["short_answer"], "long_answer": response["long_answer"]}
    entry: dict[str, Any] = {"answer": response.get("answer", "")}
    if response.get("ranking") is not None:
        entry["ranking"] = list(response["ranking"])
    return entry
