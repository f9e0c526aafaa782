"""What the runner needs of a benchmark to put a split to an agent and keep its answers:
``Runs``."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar, Generic, TypeVar

from evaluator.seam.agent_plan import AgentPlan

SplitT = TypeVar("SplitT")
PredictionT = TypeVar("PredictionT")


class Runs(ABC, Generic[SplitT, PredictionT]):
    """One run's items as the agent is asked them, and its answers as the server stores
    them."""

    searches: ClassVar[bool] = False  # whether its agents may use Podium's search service
    # ... over the challenge's corpus (image and web search); False: image search only, among
    # each item's candidates (``AgentPlan.candidates``; no corpus needed)
    search_corpus: ClassVar[bool] = True

    @abstractmethod
    def agent_plan(self, split: SplitT, task: str, answered: dict[str, str]) -> AgentPlan[Any]:
        """One run's items as the runner asks them (``answered``: item key -> stored reply of
        items an earlier attempt answered, for histories); ``task``: the agent's task id."""

    @abstractmethod
    def stored_prediction(self, split: SplitT, key: str, response: str) -> PredictionT:
        """The prediction a stored answer makes (``response``: the text the server kept)."""

    @abstractmethod
    def stored_reply(self, prediction: PredictionT) -> str:
        """A prediction as the server stores its answer (``stored_prediction``'s inverse)."""

    @abstractmethod
    def prediction_record(self, split: SplitT, key: str, response: str) -> dict[str, Any]:
        """A stored answer as one line of the benchmark's predictions file (``load_predictions``
        reads it back): what ``python -m workers.cli`` writes."""
