"""Podium's data model; the modules group it by who writes it."""

from leaderboard.models.challenge import Challenge, Phase, Split, Task
from leaderboard.models.results import (
    EntryComparison,
    JudgmentRecord,
    SliceScore,
    TurnAnswer,
    TurnVerdict,
)
from leaderboard.models.submission import EvaluationRun, InvalidTransition, Submission
from leaderboard.models.team import Invitation, Membership, Team

__all__ = [
    "Challenge",
    "EntryComparison",
    "EvaluationRun",
    "InvalidTransition",
    "Invitation",
    "JudgmentRecord",
    "Membership",
    "Phase",
    "SliceScore",
    "Split",
    "Submission",
    "Task",
    "Team",
    "TurnAnswer",
    "TurnVerdict",
]
