"""Podium's data model; the modules group it by who writes it."""

from leaderboard.models.api_token import ApiToken
from leaderboard.models.audit import AuditItem, AuditLabel, ChallengeLabeller, JudgeAudit
from leaderboard.models.challenge import Challenge, Phase, Task
from leaderboard.models.challenge_files import KitFile, SearchCorpus
from leaderboard.models.challenge_version import ChallengeVersion
from leaderboard.models.hub_models import HubModel
from leaderboard.models.image_archive import ImageArchive
from leaderboard.models.judge_preview import JudgePreview, PreviewFlip, PreviewRun
from leaderboard.models.mail import Mailing, MailPreference
from leaderboard.models.participation import Ban, Registration
from leaderboard.models.ranked_slices import RankedSlices
from leaderboard.models.results import (
    AnswerSimilarity,
    EntryComparison,
    Headline,
    ItemAnswer,
    ItemVerdict,
    JudgmentRecord,
    RankedBoard,
    SliceScore,
)
from leaderboard.models.run_action import RunAction, SubmissionAction
from leaderboard.models.split import Split, current_splits
from leaderboard.models.submission import (
    EvaluationRun,
    InvalidTransition,
    Submission,
    SubmissionTask,
)
from leaderboard.models.team import Invitation, Membership, Team
from leaderboard.models.terms import TermsAcceptance
from leaderboard.models.units import RunUnits, UnitSlices

__all__ = [
    "AnswerSimilarity",
    "ApiToken",
    "AuditItem",
    "AuditLabel",
    "Ban",
    "Challenge",
    "ChallengeLabeller",
    "ChallengeVersion",
    "EntryComparison",
    "EvaluationRun",
    "Headline",
    "HubModel",
    "ImageArchive",
    "InvalidTransition",
    "Invitation",
    "ItemAnswer",
    "ItemVerdict",
    "JudgeAudit",
    "JudgePreview",
    "JudgmentRecord",
    "KitFile",
    "MailPreference",
    "Mailing",
    "Membership",
    "Phase",
    "PreviewFlip",
    "PreviewRun",
    "RankedBoard",
    "RankedSlices",
    "Registration",
    "RunAction",
    "RunUnits",
    "SearchCorpus",
    "SliceScore",
    "Split",
    "Submission",
    "SubmissionAction",
    "SubmissionTask",
    "Task",
    "Team",
    "TermsAcceptance",
    "UnitSlices",
    "current_splits",
]
