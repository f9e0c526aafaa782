"""How a benchmark reads predictions and grades them: ``Grading``, and the per-item table its
graded items are written to and read back from."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

from evaluator.judges.base import Judge
from evaluator.judges.cache import JudgmentCache
from evaluator.judges.rubric import Rubric
from evaluator.judges.transcript import TranscriptWriter
from evaluator.records import EvaluatorError

SplitT = TypeVar("SplitT")
PredictionT = TypeVar("PredictionT")
ItemT = TypeVar("ItemT")


class Grading(ABC, Generic[SplitT, PredictionT, ItemT]):
    """Predictions in, graded items out; each graded item one row of the per-item table."""

    name: ClassVar[str]
    rubric: ClassVar[Rubric]  # what its judges are asked
    # Some judge prompts carry images (M2RAG): they go to a judge that sees them
    # (``vision_routed``; on the server the task's vision judge endpoint, which an
    # LLM-judged task must have to be published)
    image_prompts: ClassVar[bool] = False
    table: ClassVar[str]  # the per-item table's file stem ("turns", "queries")
    columns: ClassVar[tuple[str, ...]]  # its fixed columns, in order; label columns follow

    @abstractmethod
    def load_predictions(
        self, path: str | Path, split: SplitT
    ) -> tuple[dict[str, PredictionT], list[str]]:
        """Predictions keyed by what they answer, and warnings (items left unanswered)."""

    @abstractmethod
    def grade(
        self,
        split: SplitT,
        predictions: Mapping[str, PredictionT],
        judge: Judge,
        cache: JudgmentCache | None,
        progress: bool = True,
        transcript: TranscriptWriter | None = None,
    ) -> list[ItemT]:
        """Grade every item of ``split``; items the judge could not decide stay undecided.
        Every judge call goes to ``transcript`` (with the key the benchmark gives it)."""

    def never_asked(self, split: SplitT, keys: Collection[str]) -> set[str]:
        """The keys among ``keys`` that no grading of ``split`` asks the judge, whatever the
        predictions: a replayed transcript's line under one is refused (a key of another split,
        or mistyped). The default knows of none."""
        return set()

    def vision_routed(self, judge: Judge, vision: Judge) -> Judge:
        """The judge to give ``grade``: ``judge`` for the prompts, ``vision`` (a model that
        sees images) for those carrying images; only for benchmarks with ``image_prompts``."""
        raise EvaluatorError(f"{self.name}: no judge prompt carries an image")

    @abstractmethod
    def item_key(self, item: ItemT) -> str:
        """The key of the answer a graded item grades (one of ``split_keys``)."""

    @abstractmethod
    def item_grade(self, item: ItemT) -> str:
        """A graded item's grade (``evaluator.judges.rubric.UNJUDGED`` when undecided)."""

    @abstractmethod
    def abstains(self, grade: str) -> bool:
        """Whether ``grade`` says the agent gave no answer (CRAG-MM ``missing``, Visual-RAG
        ``no_answer``): such answers are left out when two teams' answers are compared."""

    def verdict_menu(self) -> tuple[str, ...]:
        """The grades a person auditing the judge chooses among, in the order a labelling page
        offers them: the rubric's (``Rubric.menu``), and those the benchmark decides before any
        judge call; empty when an item's grade is not one of a few (M2RAG: a number per
        answer), so its judge cannot be audited item by item."""
        return self.rubric.menu()

    def verdict_value(self, verdict: str) -> float | None:
        """What an item graded ``verdict`` adds to the mean the primary metric is (CRAG-MM's
        truthfulness: correct 1, missing 0, hallucinated -1); None where the primary metric is
        no mean of per-item values of the verdicts, so people's labels cannot calibrate it
        (``evaluator.calibrated``; the default)."""
        return None

    @abstractmethod
    def to_row(self, item: ItemT) -> dict[str, Any]:
        """One row of the per-item table (the ``columns`` first, then label columns)."""

    @abstractmethod
    def from_row(self, row: Mapping[str, Any], where: str) -> ItemT:
        """Read a row written by ``to_row`` back; ``where`` names the file and line for errors."""
