"""CRAG-MM's agent plan: turn order and conversation histories, exactly as the official CRAG-MM
evaluator has them, and the benchmark's ``turns`` requests (kits A and B).

The official ``CRAGTurnBatchIterator`` keeps a queue of conversations: a batch pops up to
``batch_size`` conversations from the front, takes one turn from each, and puts every
conversation that still has turns back at the *front* of the queue (``appendleft``, in the
order they were processed). So turn N+1 of a conversation only comes in a strictly later batch
than turn N, and a conversation stays in the rotation until it ends.

Resuming a run skips turns already answered; the rest keep that order. Histories hold the
earlier queries and the agent's own (truncated) earlier answers: no system message, no image,
never the ground truth.
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentkit.protocol import TASKS, clip_batch_size
from evaluator.benchmarks.crag_mm.records import Conversation, Split, Turn
from evaluator.seam.agent_plan import AgentPlan, BatchRefused, Reply, RequestContext, cap_text


@dataclass(frozen=True)
class TurnRef:
    """One turn of one conversation, as the runner sends it."""

    conversation: Conversation
    turn_idx: int

    @property
    def turn(self) -> Turn:
        return self.conversation.turns[self.turn_idx]

    @property
    def session_id(self) -> str:
        return self.conversation.session_id

    @property
    def interaction_id(self) -> str:
        return self.turn.interaction_id


def turn_batches(
    conversations: Sequence[Conversation],
    batch_size: int,
    answered: Collection[str] = (),
) -> Iterator[list[TurnRef]]:
    """Batches of turns in the official order, leaving out turns in ``answered``."""
    size = clip_batch_size(batch_size)
    pending = {
        index: collections.deque(
            i for i, t in enumerate(c.turns) if t.interaction_id not in answered
        )
        for index, c in enumerate(conversations)
    }
    queue = collections.deque(index for index in range(len(conversations)) if pending[index])
    while queue:
        current = [queue.popleft() for _ in range(min(size, len(queue)))]
        batch = []
        for index in current:
            batch.append(TurnRef(conversations[index], pending[index].popleft()))
            if pending[index]:
                queue.appendleft(index)
        yield batch


def turn_request(
    ref: TurnRef,
    truncated_answers: Mapping[str, str],
    *,
    image_path: str | None = None,
    rag_context: str | None = None,
    domain: str | None = None,
) -> dict[str, Any]:
    """The benchmark's TurnRequest for ``ref``. ``image_path``: where its image is inside the
    container (``ImageVolume.show``); ``rag_context`` and ``domain`` are for kit B agents."""
    return {
        "session_id": ref.session_id,
        "interaction_id": ref.interaction_id,
        "turn_idx": ref.turn_idx,
        "query": ref.turn.query,
        "image_path": image_path,
        "message_history": message_history(ref, truncated_answers),
        "rag_context": rag_context,
        "domain": domain,
    }


def message_history(ref: TurnRef, truncated_answers: Mapping[str, str]) -> list[dict[str, str]]:
    """The earlier turns of ``ref``'s conversation: each query, then the agent's truncated answer
    (empty for a turn that timed out)."""
    history: list[dict[str, str]] = []
    for earlier in ref.conversation.turns[: ref.turn_idx]:
        history.append({"role": "user", "content": earlier.query})
        history.append(
            {"role": "assistant", "content": truncated_answers.get(earlier.interaction_id, "")}
        )
    return history


class TurnPlan(AgentPlan[TurnRef]):
    """One run of ``task`` on ``split``: every turn, in the official order. ``truncate``: the
    75-token truncation of the answers the agent sees in its histories."""

    def __init__(
        self,
        split: Split,
        task: str,
        truncate: Callable[[str], str],
        answered: Mapping[str, str] | None = None,
    ) -> None:
        if task not in TASKS:
            raise ValueError(f"unknown task {task!r}; expected one of {', '.join(TASKS)}")
        self.split = split
        self.task = task
        self.truncate = truncate
        read_later = {
            turn.interaction_id
            for conversation in split.conversations
            for turn in conversation.turns[:-1]
        }  # the answers a later turn's history shows; the others are never truncated
        self.history_answers = {
            k: truncate(v) for k, v in (answered or {}).items() if k in read_later
        }

    def keys(self) -> list[str]:
        return [turn.interaction_id for _, _, turn in self.split.turns()]

    def batches(self, batch_size: int, answered: Collection[str]) -> Iterator[list[TurnRef]]:
        return turn_batches(self.split.conversations, batch_size, answered)

    def key(self, ref: TurnRef) -> str:
        return ref.interaction_id

    def place(self, ref: TurnRef) -> tuple[str, int]:
        return ref.session_id, ref.turn_idx

    def image_files(self, ref: TurnRef) -> Sequence[Path]:
        path = self.split.image_path(ref.conversation)
        return (path,) if path else ()

    def requests(
        self, batch: Sequence[TurnRef], paths: Sequence[Sequence[str]], context: RequestContext
    ) -> dict[str, Any]:
        turns = []
        for ref, images in zip(batch, paths, strict=True):
            image_path = images[0] if images else None
            if context.kit != "B":
                turns.append(turn_request(ref, self.history_answers, image_path=image_path))
                continue
            rag_context = None
            if context.rag_context is not None:
                rag_context = context.rag_context(
                    ref.turn.query, self.split.image_path(ref.conversation)
                )
            turns.append(
                turn_request(
                    ref,
                    self.history_answers,
                    image_path=image_path,
                    rag_context=rag_context,
                    domain=ref.turn.labels.get("domain"),
                )
            )
        return {"turns": turns}

    def read_replies(self, batch: Sequence[TurnRef], responses: list[Any], cap: int) -> list[Reply]:
        if not all(isinstance(response, str) for response in responses):
            raise BatchRefused("/batch: every response must be a string")
        return [Reply(cap_text(response, cap)) for response in responses]

    def remember(self, ref: TurnRef, text: str) -> None:
        # Only for a turn that a later one follows: the truncation (a tokenizer's encode and
        # decode, about 0.1 ms an answer) runs between two batches, while the agent waits.
        if ref.turn_idx + 1 < len(ref.conversation.turns):
            self.history_answers[ref.interaction_id] = self.truncate(text)
