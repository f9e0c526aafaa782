"""Each change of a challenge made by importing a bundle: what it became, what changed, who
imported it and when (``leaderboard.challenge_bundle``)."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from leaderboard.models.challenge import Challenge


class ChallengeVersion(models.Model):
    challenge = models.ForeignKey(Challenge, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField(help_text="1 for the first import, then one more each")
    document = models.JSONField(help_text="the challenge as imported (canonical, with digests)")
    changes = models.JSONField(default=list, help_text="the diff from the version before")
    imported_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    imported_at = models.DateTimeField(default=timezone.now)
    via = models.CharField(max_length=32, help_text="manage.py, api, upload or demo")

    class Meta:
        ordering = ("challenge", "-number")
        constraints = (
            models.UniqueConstraint(fields=["challenge", "number"], name="challenge_version_once"),
        )

    def __str__(self) -> str:
        return f"{self.challenge.slug} v{self.number} ({self.imported_at:%Y-%m-%d %H:%M})"
