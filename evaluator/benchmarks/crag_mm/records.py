"""CRAG-MM's records: split items, predictions, verdicts.

Names follow the benchmark: a split holds conversations, a conversation holds turns,
each turn has a ground truth (``ans_full``) and labels that become slices.
"""

from __future__ import annotations

import enum
import functools
from dataclasses import dataclass, field
from pathlib import Path

# The labels every CRAG-MM turn carries; any other string field on a turn is an extra slice.
STANDARD_LABELS: tuple[str, ...] = ("domain", "query_category", "dynamism", "image_quality")


class Verdict(enum.StrEnum):
    """The grade of one turn. UNJUDGED is never counted as hallucinated."""

    CORRECT = "correct"
    MISSING = "missing"
    HALLUCINATED = "hallucinated"
    UNJUDGED = "unjudged"


@dataclass(frozen=True)
class Turn:
    interaction_id: str
    query: str
    ground_truth: str  # ans_full
    labels: dict[str, str] = field(default_factory=dict)  # standard labels + extra slice fields


@dataclass(frozen=True)
class Conversation:
    session_id: str
    image: str | None  # path relative to the split directory, e.g. "images/x.jpg"
    image_url: str | None
    turns: tuple[Turn, ...]

    @property
    def is_ego(self) -> bool:
        """Egocentric means ``image_url`` is empty, as in the official code."""
        return not self.image_url


@dataclass
class Split:
    root: Path
    conversations: list[Conversation]
    notes: tuple[str, ...] = ()  # what loading it changed (the official data corrections)

    def image_path(self, conversation: Conversation) -> Path | None:
        return self.root / conversation.image if conversation.image else None

    def turns(self) -> list[tuple[Conversation, int, Turn]]:
        return [(c, i, t) for c in self.conversations for i, t in enumerate(c.turns)]

    @functools.cached_property
    def conversation_of(self) -> dict[str, Conversation]:
        """Each turn's conversation: interaction_id -> conversation."""
        return {t.interaction_id: c for c, _, t in self.turns()}

    @functools.cached_property
    def session_of(self) -> dict[str, str]:
        """Each turn's session: interaction_id -> session_id."""
        return {t.interaction_id: c.session_id for c, _, t in self.turns()}


@dataclass(frozen=True)
class Prediction:
    session_id: str
    interaction_id: str
    response: str


@dataclass(frozen=True)
class GradedTurn:
    """One row of the official per-turn table, plus Podium's verdict and audit fields."""

    session_id: str
    interaction_id: str
    turn_idx: int
    is_ego: bool
    labels: dict[str, str]
    query: str
    ground_truth: str
    agent_response: str  # truncated
    is_exact_match: bool
    is_miss: bool
    verdict: Verdict
    judge_id: str
    prompt_version: str
    prompt_hash: str = ""
    judge_error: str | None = None  # why the judge left this turn UNJUDGED

    @property
    def is_correct(self) -> bool:
        return self.verdict is Verdict.CORRECT
