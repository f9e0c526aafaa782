"""How a benchmark aggregates graded items: ``Scoring``, with its declared metrics, a typed
``Score`` and a typed paired ``Comparison``."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Generic, TypeVar

import numpy as np

from evaluator.seam.scores import Comparison, Metric, Score, ScoreBlock

ItemT = TypeVar("ItemT")
# Per slice dimension, each unit's slice value in ``Scoring.units``' order; None where the
# unit's items have several values of it (a conversation's turns: the ``turn`` dimension).
UnitSlices = dict[str, list[str | None]]


class Scoring(ABC, Generic[ItemT]):
    """Metrics over graded items, the scores across one submission's settings, and the paired
    comparison of two runs."""

    metrics: ClassVar[tuple[Metric, ...]]
    primary: ClassVar[str]  # the default primary metric (ranks entries, paired comparison)
    # the value from which a unit (``units``) counts as passed: pass^k of repeated runs is the
    # share of units passed in all k (``evaluator.repeats``); None: the benchmark has no pass
    passing_unit: ClassVar[float | None] = None

    @abstractmethod
    def aggregate(self, graded: Sequence[ItemT], seed: int = 0) -> dict[str, Any]:
        """The scores.json document: ``{"complete", "unjudged", <the metric blocks>,
        "slices"}``."""

    @abstractmethod
    def score_blocks(self, document: Mapping[str, Any]) -> list[ScoreBlock]:
        """An ``aggregate`` document as the rows the server stores: ``all``/``all`` first, then
        one per slice value."""

    def score(self, graded: Sequence[ItemT], seed: int = 0) -> Score:
        """The run's scores: its document and its stored rows."""
        return self.read_score(self.aggregate(graded, seed))

    def read_score(self, document: Mapping[str, Any]) -> Score:
        """A stored scores document read back as a ``Score``."""
        return Score(dict(document), tuple(self.score_blocks(document)))

    @abstractmethod
    def paired(self, a: Sequence[ItemT], b: Sequence[ItemT], seed: int = 0) -> dict[str, Any]:
        """The paired test of two runs on the same items, on the primary metric, as the
        benchmark documents it (``Comparison``'s fields and its own); an ``EvaluatorError``
        when the runs cannot be paired (other items, unjudged items)."""

    def units(self, graded: Sequence[ItemT]) -> np.ndarray | None:
        """The run's values of the primary metric per unit its paired comparison pairs (a
        conversation, an item), in an order every run of the split shares: what the board's
        rank intervals and groups resample (``evaluator.board_stats``). None when the run
        cannot be paired (unjudged items), or for a benchmark that does not say."""
        return None

    def unit_slices(self, graded: Sequence[ItemT]) -> UnitSlices:
        """Which slice value each of ``units(graded)``' units belongs to, per dimension, as
        the scores' slices name them: what a slice's rank intervals and groups resample (a
        slice value's units are a subset of the board's). Empty for a benchmark that does not
        say."""
        return {}

    def compare(self, a: Sequence[ItemT], b: Sequence[ItemT], seed: int = 0) -> Comparison:
        """Paired comparison of two runs on the same items, on the primary metric."""
        return Comparison.from_document(self.paired(a, b, seed))

    def derived(self, settings: Mapping[str, Mapping[str, Any]]) -> dict[str, float | None]:
        """Scores across one submission's runs (``settings``: each setting's headline metrics,
        as ``score_blocks`` stored them), e.g. Visual-RAG's gCUE; none by default. A score that
        cannot be computed is None, and ``undefined`` says why."""
        return {}

    def undefined(self, settings: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
        """Why each of ``derived(settings)``'s None values is undefined, by name."""
        return {}

    def in_setting(self, metric: Metric, setting: str) -> bool:
        """Whether runs of ``setting`` have ``metric`` (the leaderboard's columns)."""
        return True

    def on_board(self, metric: Metric, groups: int, items: int) -> bool:
        """Whether ``metric`` means something on a split of ``groups`` groups holding ``items``
        items (``split_counts``); a leaderboard shows no column that does not."""
        return True

    def ranking_metrics(self) -> tuple[Metric, ...]:
        """The metrics that may rank a task's entries (its primary metric): those a run of
        these settings is scored on, neither a count nor a score across a submission's
        settings (``derived``: Visual-RAG's gCUE, MRAG-Suite's GPD - GO gap)."""
        settings = self.run_settings()
        return tuple(
            m
            for m in self.metrics
            if m.scale != "count" and any(self.in_setting(m, s) for s in settings)
        )

    @abstractmethod
    def run_settings(self) -> tuple[str, ...]:
        """The settings a task evaluates (``Splits.run_settings`` gives it)."""

    def metric(self, name: str) -> Metric:
        """The declared metric called ``name`` (KeyError when there is none)."""
        for metric in self.metrics:
            if metric.name == name:
                return metric
        raise KeyError(name)
