"""The admin: organisers manage challenges, upload splits, mark baselines, watch runs."""

from leaderboard.admin import challenges, judge_previews, runs, teams, versions

__all__ = ["challenges", "judge_previews", "runs", "teams", "versions"]
