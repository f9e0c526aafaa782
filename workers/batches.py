"""Turn order and conversation histories, exactly as the official CRAG-MM evaluator has them.

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
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass

from agentkit.protocol import clip_batch_size
from evaluator.protocols.crag_mm.records import Conversation, Turn


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
) -> dict:
    """The protocol's TurnRequest for ``ref``. ``image_path``: where its image is inside the
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
