"""What every benchmark protocol provides, so a new benchmark is one more protocol.

A protocol turns a split and an agent's predictions into graded items (one row each in the
per-item table), and graded items into a scores dictionary: ``"all"``, the protocol's own
headline subsets, and ``"slices"`` (``{dimension: {value: metrics}}``, each with its count).
Its settings (how answers are cut, which missing-answer rule, which counting order...) are
constructor arguments, reported by ``settings()`` next to the scores.

CRAG-MM is the one implemented protocol. Visual-RAG would grade a ranked image list plus an
answer (its settings: k values, the evaluation setting), MRAG a claim list per answer; each
keeps its own item record and columns and shares the judge, cache, report and CLI.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Generic, TypeVar

from evaluator.judges.base import Judge
from evaluator.judges.cache import JudgmentCache
from evaluator.judges.transcript import TranscriptWriter
from evaluator.records import Prediction, Split

Item = TypeVar("Item")


class Protocol(ABC, Generic[Item]):
    """Grading, aggregation and the per-item table of one benchmark."""

    name: ClassVar[str]
    # The per-item table's fixed columns, in order; label columns beyond them follow.
    columns: ClassVar[tuple[str, ...]]

    @abstractmethod
    def settings(self) -> dict[str, Any]:
        """The protocol's settings as they go into scores.json."""

    @abstractmethod
    def grade(
        self,
        split: Split,
        predictions: Mapping[str, Prediction],
        judge: Judge,
        cache: JudgmentCache | None,
        progress: bool = True,
        transcript: TranscriptWriter | None = None,
    ) -> list[Item]:
        """Grade every item of ``split``; items the judge could not decide stay undecided.
        Every judge call goes to ``transcript`` (with the key the protocol gives it)."""

    @abstractmethod
    def score(self, graded: Sequence[Item], seed: int = 0) -> dict[str, Any]:
        """Aggregate: ``{"complete", "unjudged", "all", ..., "slices"}``."""

    @abstractmethod
    def to_row(self, item: Item) -> dict[str, Any]:
        """One row of the per-item table (the ``columns`` first, then label columns)."""

    @abstractmethod
    def from_row(self, row: Mapping[str, Any], where: str) -> Item:
        """Read a row written by ``to_row`` back; ``where`` names the file and line for errors."""
