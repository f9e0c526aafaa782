"""The admin: organisers manage challenges, upload splits, mark baselines, watch runs."""

from leaderboard.admin import audits, challenges, runs, teams

__all__ = ["audits", "challenges", "runs", "teams"]
