"""The admin: organisers manage challenges, upload splits, mark baselines, watch runs."""

from leaderboard.admin import (
    audits,
    challenges,
    judge_previews,
    mail,
    runs,
    slices,
    teams,
    versions,
)

__all__ = ["audits", "challenges", "judge_previews", "mail", "runs", "slices", "teams", "versions"]
