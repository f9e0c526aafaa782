"""Who accepted which version of a challenge's rules, and when."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from leaderboard.models.challenge import Challenge


class TermsAcceptance(models.Model):
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="terms_accepted"
    )
    challenge = models.ForeignKey(Challenge, on_delete=models.CASCADE, related_name="+")
    rules_sha256 = models.CharField(max_length=64, help_text="the rules' text as accepted")
    accepted_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = (
            models.UniqueConstraint(
                fields=["user", "challenge", "rules_sha256"], name="terms_once_per_version"
            ),
        )

    def __str__(self) -> str:
        return f"{self.user} accepted the rules of {self.challenge} ({self.accepted_at:%Y-%m-%d})"
