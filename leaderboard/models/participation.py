"""Who may take part in a challenge: teams' registrations (where the challenge asks organisers
to approve them) and bans of a team or a participant, each with its reason
(``leaderboard.participation``)."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from leaderboard.models.challenge import Challenge
from leaderboard.models.team import Team


class Registration(models.Model):
    class State(models.TextChoices):
        PENDING = "pending", "waiting for the organisers"
        APPROVED = "approved", "approved"
        REFUSED = "refused", "refused"

    challenge = models.ForeignKey(Challenge, on_delete=models.CASCADE, related_name="registrations")
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="registrations")
    state = models.CharField(max_length=16, choices=State, default=State.PENDING)
    reason = models.TextField(blank=True, help_text="a refusal's, shown to the team")
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ("created_at",)
        constraints = (
            models.UniqueConstraint(fields=["challenge", "team"], name="registration_once"),
        )

    def __str__(self) -> str:
        return f"{self.team} in {self.challenge} ({self.state})"


class Ban(models.Model):
    """A team, or one participant (in whichever team), may not submit to the challenge."""

    challenge = models.ForeignKey(Challenge, on_delete=models.CASCADE, related_name="bans")
    team = models.ForeignKey(
        Team, null=True, blank=True, on_delete=models.CASCADE, related_name="bans"
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="challenge_bans",
    )
    reason = models.TextField(help_text="shown to the banned team or participant")
    by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ("-created_at",)
        constraints = (
            models.CheckConstraint(
                condition=Q(team__isnull=True, user__isnull=False)
                | Q(team__isnull=False, user__isnull=True),
                name="ban_team_or_user",
            ),
            models.UniqueConstraint(fields=["challenge", "team"], name="ban_team_once"),
            models.UniqueConstraint(fields=["challenge", "user"], name="ban_user_once"),
        )

    def __str__(self) -> str:
        return f"{self.team or self.user} banned from {self.challenge}"
