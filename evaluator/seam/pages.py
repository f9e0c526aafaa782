"""How a benchmark's runs, entries and answers look on Podium's pages and in the CLI's words:
``Pages``."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

SplitT = TypeVar("SplitT")
ItemT = TypeVar("ItemT")


@dataclass(frozen=True)
class Profile:
    """An entry's diagnosis as its leaderboard page charts it (``Pages.profile``): one group
    of bars per row (its label and, per series, the metric of its bar, None for no bar), all
    on one scale; ``derived``: the scores across settings shown beside it."""

    title: str
    series: tuple[str, ...]
    rows: tuple[tuple[str, tuple[str | None, ...]], ...]
    derived: tuple[str, ...] = ()


@dataclass(frozen=True)
class ShownAnswer:
    """An answer as a run page renders it: markdown (the team's: shown sanitised, no raw HTML,
    no remote image) whose images are links ``image:N``, N an index of ``placed_images``, and
    what the page says beside each image (its scores)."""

    markdown: str
    image_notes: dict[int, str]


class Pages(ABC, Generic[SplitT, ItemT]):
    """Words, rows and pictures for people: the run page, the entry page, the CLI summary."""

    title: ClassVar[str]
    unit: ClassVar[str]  # what a score block counts, plural ("turns", "queries")
    groups: ClassVar[str]  # what a split's items are grouped in ("conversations", "species")
    # the per-item row's fields (``to_row``) holding the item's question and its ground truth:
    # what a run page shows beside each answer of a public split
    shown_fields: ClassVar[tuple[str, str]]
    # the per-item row's field holding the answer as the judge read it (CRAG-MM: cut to 75
    # tokens): what a person auditing the judge reads
    answer_field: ClassVar[str] = "answer"

    @abstractmethod
    def item_slices(self, row: Mapping[str, Any]) -> dict[str, str]:
        """The slice values of one per-item row (``to_row``), named as the scores' slices are
        (dimension -> value): what the run page filters its answers by."""

    @abstractmethod
    def falls_short(self, grade: str) -> bool:
        """Whether ``grade`` (an ``item_grade``) is a wrong answer in the benchmark's terms
        (CRAG-MM: missing or hallucinated; Visual-RAG: below full score or no answer): the run
        page's "wrong answers only". ``unjudged`` never is."""

    @abstractmethod
    def item_image(self, split: SplitT, key: str) -> Path | None:
        """The image the agent was shown first for the answer ``key`` (one of ``split_keys``
        of any setting), or None: the run page shows it, scaled down, beside the answer."""

    def placed_images(self, split: SplitT, item: ItemT) -> dict[int, Path]:
        """The images a graded answer shows within its text, by the index it names them
        (M2RAG's placements): the judging stage stores them for the run page; none by
        default."""
        return {}

    def shown_answer(self, row: Mapping[str, Any]) -> ShownAnswer | None:
        """How a run page shows the answer of a verdict row (``to_row``) when it is markdown
        with images (M2RAG); None by default: the stored reply, as text."""
        return None

    def profile(self) -> Profile | None:
        """The per-entry profile a leaderboard entry's page charts from the entry's headline
        metrics (MRAG-Suite: the claim metrics over all, image and text items); None: no
        profile."""
        return None

    @abstractmethod
    def summary(self, document: Mapping[str, Any], graded: Sequence[ItemT]) -> str:
        """The headline numbers of a scores document, for people (the CLI prints it)."""

    @abstractmethod
    def format_comparison(self, result: Mapping[str, Any], a_name: str, b_name: str) -> str:
        """A few readable lines for a comparison (``Comparison.document``)."""
