"""App configuration; logs once, in every process (web, workers, beat), which embedded defaults
are in use and which install this is (its id and the prefix of its Redis keys and queues)."""

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
        logger.info(
            "install %s: its Redis keys, Celery queues and results begin with %r "
            "(another install on the same Redis database never sees them)",
            settings.PODIUM_INSTALL_ID,
            settings.PODIUM_REDIS_PREFIX,
        )
