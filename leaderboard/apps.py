"""App configuration; logs once which embedded defaults are in use."""

from __future__ import annotations

import logging

from django.apps import AppConfig
from django.conf import settings

logger = logging.getLogger("podium")


class LeaderboardConfig(AppConfig):
    name = "leaderboard"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from leaderboard import api_tokens, board_cache, run_mail  # noqa: F401 - connect receivers

        defaults = getattr(settings, "DEFAULTS_IN_USE", [])
        if defaults:
            logger.info("using embedded defaults: %s", "; ".join(defaults))
        else:
            logger.info("every setting comes from the environment")
