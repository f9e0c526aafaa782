"""How a benchmark puts its items to an agent: the runner's side of the seam.

The runner (``workers/runner.py``) knows containers, deadlines, restarts and image files; it
knows nothing of a benchmark. A benchmark's ``agent_plan(split, setting)`` gives it an
``AgentPlan``: the items of one run in the order they are asked (in batches, skipping those
already answered), the image files each item lets the agent read, each batch's request body,
and how a reply becomes the text the server stores (``Benchmark.stored_prediction`` reads it
back).

A reply that breaks the benchmark's schema for one item is that item's problem (``Reply``
with ``problem``, stored as ``invalid``); a reply the benchmark cannot take at all (CRAG-MM:
a response that is not a string) raises ``BatchRefused`` and fails the run, in Podium's words.
"""

from __future__ import annotations

import heapq
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

RefT = TypeVar("RefT")
PAGE_BYTES = 4096  # tmpfs allocates whole pages
MARGIN_BYTES = 256 * 1024  # directory entries and inodes

# Kit B's retrieved context for one question and its image (the search service's, or None).
RagContext = Callable[[str, Path | None], str]


BATCHES_HELD = 3  # batches the image directory holds at once (volume_bytes)


class BatchRefused(Exception):
    """A reply the benchmark cannot take (the message is Podium's words, never the agent's)."""


@dataclass(frozen=True)
class Reply:
    """One item's reply as stored: ``text`` (what ``stored_prediction`` reads back) and, when
    the reply broke the benchmark's schema for this item, ``problem`` in Podium's words."""

    text: str
    problem: str | None = None


@dataclass(frozen=True)
class RequestContext:
    """What the runner knows about the agent when it builds a request: its kit (``A``/``B`` for
    CRAG-MM's kit adapters, ``items`` for protocol v3) and kit B's context source."""

    kit: str | None
    rag_context: RagContext | None = None


def cap_text(text: str, cap_bytes: int) -> str:
    """Valid UTF-8 without NUL, at most ``cap_bytes`` bytes, cut on a character boundary."""
    data = text.replace("\x00", "\ufffd").encode("utf-8", errors="replace")
    return data[:cap_bytes].decode("utf-8", errors="ignore")


def in_batches(refs: Sequence[RefT], batch_size: int) -> Iterator[list[RefT]]:
    """``refs`` in order, ``batch_size`` (at least 1) at a time: a plan's ``batches``."""
    size = max(1, batch_size)
    for start in range(0, len(refs), size):
        yield list(refs[start : start + size])


def page_bytes(path: Path) -> int:
    return -(-path.stat().st_size // PAGE_BYTES) * PAGE_BYTES


class AgentPlan(ABC, Generic[RefT]):
    """One run's items as the agent is asked them (``RefT``: the benchmark's item reference)."""

    benchmark: str | None = None  # the body's "protocol" field (None: CRAG-MM's "turns")

    @abstractmethod
    def keys(self) -> list[str]:
        """Every item key of the run (``Benchmark.split_keys`` for its setting)."""

    @abstractmethod
    def batches(self, batch_size: int, answered: Collection[str]) -> Iterator[list[RefT]]:
        """Batches in the order they are asked, leaving out the keys in ``answered``. The
        order never depends on the answers (the runner stages the next batch's images)."""

    @abstractmethod
    def key(self, ref: RefT) -> str:
        """The item's key: unique in the run, the judge's and the stored answer's."""

    @abstractmethod
    def place(self, ref: RefT) -> tuple[str, int]:
        """Where the item sits, for people reading a run's answers: its group (CRAG-MM: the
        session; Visual-RAG: the setting) and its position in the group."""

    @abstractmethod
    def image_files(self, ref: RefT) -> Sequence[Path]:
        """The files the agent may read while it answers this item, in the request's order."""

    def candidates(self, ref: RefT) -> Sequence[tuple[str, Path]]:
        """The images the agent may search among for this item (``(image id, file)``), through
        the search service's candidate search; none by default."""
        return ()

    @abstractmethod
    def requests(
        self, batch: Sequence[RefT], paths: Sequence[Sequence[str]], context: RequestContext
    ) -> dict[str, Any]:
        """The batch's body fields besides ``batch_id`` and ``deadline_s`` (``turns``, or
        ``protocol`` and ``items``); ``paths``: each item's image files inside the container."""

    @abstractmethod
    def read_replies(self, batch: Sequence[RefT], responses: list[Any], cap: int) -> list[Reply]:
        """The stored reply of each item (``responses``: the agent's, one per item, in order);
        ``cap``: most bytes an answer keeps. ``BatchRefused`` when the batch cannot be taken."""

    def remember(self, ref: RefT, text: str) -> None:
        """An item's stored reply (or "" after a time-out), for the requests that follow
        (CRAG-MM's histories); nothing by default."""

    def volume_bytes(self, batch_size: int) -> int:
        """The image directory's size: room for three batches (the one answered last, which
        agentkit may still be letting go of, the one shown and the one staged ahead:
        ``workers.image_volume``) of the largest items' images, and never more than every image
        of the run; each file in whole pages, plus a margin. (A size is a limit, not a
        reservation: the volume only holds what is written.)"""
        refs = [ref for batch in self.batches(1, ()) for ref in batch]
        files = [set(self.image_files(ref)) for ref in refs]
        largest = heapq.nlargest(
            BATCHES_HELD * batch_size, (sum(map(page_bytes, f)) for f in files)
        )
        every = sum(map(page_bytes, set().union(*files)))
        return min(sum(largest), every) + MARGIN_BYTES


class ListedPlan(AgentPlan[RefT]):
    """A run over a fixed list of items, asked in the list's order, in batches; an item's
    place is the run's ``group`` (its setting) and its position in the list."""

    def __init__(self, items: Sequence[RefT], group: str) -> None:
        self.items = list(items)
        self.group = group
        self.positions = {self.key(item): index for index, item in enumerate(self.items)}

    def keys(self) -> list[str]:
        return [self.key(item) for item in self.items]

    def batches(self, batch_size: int, answered: Collection[str]) -> Iterator[list[RefT]]:
        left = [item for item in self.items if self.key(item) not in answered]
        return in_batches(left, batch_size)

    def place(self, ref: RefT) -> tuple[str, int]:
        return self.group, self.positions[self.key(ref)]
