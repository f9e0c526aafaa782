"""Submitting an agent: one code path (``submit``) for the web form, the API and the demo."""

from leaderboard.quotas import QuotaExceeded
from leaderboard.submitting.flags import set_flags
from leaderboard.submitting.submit import (
    Artifact,
    MethodInfo,
    add_missing_runs,
    evaluated_splits,
    submit,
)

__all__ = [
    "Artifact",
    "MethodInfo",
    "QuotaExceeded",
    "add_missing_runs",
    "evaluated_splits",
    "set_flags",
    "submit",
]
