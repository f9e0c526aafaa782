"""Submitting an agent: one code path (``submit``) for the web form, the API and the demo."""

from leaderboard.quotas import QuotaExceeded
from leaderboard.submitting.flags import set_flags
from leaderboard.submitting.submit import Artifact, MethodInfo, evaluated_splits, submit

__all__ = ["Artifact", "MethodInfo", "QuotaExceeded", "evaluated_splits", "set_flags", "submit"]
