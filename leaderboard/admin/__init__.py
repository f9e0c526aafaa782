"""The admin: organisers manage challenges, upload splits, mark baselines, watch runs."""

from leaderboard.admin import challenges, runs, teams

__all__ = ["challenges", "runs", "teams"]
