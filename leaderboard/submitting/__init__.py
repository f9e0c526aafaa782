"""Submitting an agent: one code path (``submit``) for the web form, the API and the demo."""

from leaderboard.quotas import QuotaExceeded
from leaderboard.submitting.choice import Choice, evaluated_splits
from leaderboard.submitting.flags import set_flags
from leaderboard.submitting.submit import (
    Admission,
    Artifact,
    MethodInfo,
    add_missing_runs,
    admit,
    runs_on_new_version,
    submit,
)

__all__ = [
    "Admission",
    "Artifact",
    "Choice",
    "MethodInfo",
    "QuotaExceeded",
    "add_missing_runs",
    "admit",
    "evaluated_splits",
    "runs_on_new_version",
    "set_flags",
    "submit",
]
