"""The admin: organisers manage challenges, upload splits, mark baselines, watch runs."""

from leaderboard.admin import challenges, runs, teams, versions

__all__ = ["challenges", "runs", "teams", "versions"]
