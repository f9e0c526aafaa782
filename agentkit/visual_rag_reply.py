"""The Visual-RAG reply check, written once: ``{"answer": str, "ranking": [image id, ...]}``.

Both sides read a reply with it: agentkit, in the agent's container, before it sends the batch
on (it logs the problem in the agent's log, naming the field); Podium's evaluator, when it makes
the prediction (the item's problem, in Podium's words: never the agent's bytes). Standard
library only: it ships in every agent image.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

MAX_ANSWER_CHARS = 8192  # a longer answer is a protocol error (it reaches the judge prompt)
FIELDS = ("answer", "ranking")

Kind = Literal["not-object", "unknown-fields", "answer-type", "answer-length", "no-ranking",
               "ranking-type"]  # fmt: skip


@dataclass(frozen=True)
class ReplyProblem:
    """What is wrong with a reply: its ``kind`` and, for ``unknown-fields``, those fields."""

    kind: Kind
    unknown: tuple[str, ...] = ()  # sorted


def reply_problem(response: Any, setting: str) -> ReplyProblem | None:
    """The first problem of ``response`` to an item in ``setting`` (None: a good reply). The
    ranking is required in the ``retrieval`` setting, optional elsewhere."""
    if not isinstance(response, dict):
        return ReplyProblem("not-object")
    unknown = tuple(sorted(str(key) for key in set(response) - set(FIELDS)))
    if unknown:
        return ReplyProblem("unknown-fields", unknown)
    answer = response.get("answer", "")
    if not isinstance(answer, str):
        return ReplyProblem("answer-type")
    if len(answer) > MAX_ANSWER_CHARS:
        return ReplyProblem("answer-length")
    ranking = response.get("ranking")
    if ranking is None:
        return ReplyProblem("no-ranking") if setting == "retrieval" else None
    if not isinstance(ranking, list | tuple) or not all(isinstance(x, str) for x in ranking):
        return ReplyProblem("ranking-type")
    return None
