"""Teams of Django users, their memberships and invitations."""

from __future__ import annotations

import secrets
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth.models import User
from django.db import models
from django.utils import timezone

INVITATION_LIFETIME = timedelta(days=14)


class Team(models.Model):
    name = models.CharField(max_length=200, unique=True)
    members = models.ManyToManyField(
        settings.AUTH_USER_MODEL, through="Membership", related_name="teams"
    )
    # the team of a challenge's declared baselines (a bundle's ``baselines:``); None for
    # participants' teams
    baselines_of = models.OneToOneField(
        "leaderboard.Challenge",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="baseline_team",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ("name",)

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    class Role(models.TextChoices):
        OWNER = "owner", "owner"
        MEMBER = "member", "member"

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    role = models.CharField(max_length=16, choices=Role, default=Role.MEMBER)
    joined_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = (
            models.UniqueConstraint(fields=["team", "user"], name="membership_unique_user"),
        )

    def __str__(self) -> str:
        return f"{self.user} in {self.team} ({self.role})"


def _invitation_token() -> str:
    return secrets.token_urlsafe(32)


def _invitation_expiry() -> datetime:
    return timezone.now() + INVITATION_LIFETIME


class Invitation(models.Model):
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="invitations")
    email = models.EmailField()
    token = models.CharField(max_length=64, unique=True, default=_invitation_token, editable=False)
    invited_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(default=_invitation_expiry)
    accepted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ("-created_at",)

    def __str__(self) -> str:
        return f"{self.email} -> {self.team}"

    def is_usable(self) -> bool:
        return self.accepted_at is None and timezone.now() < self.expires_at

    def accept(self, user: User) -> Membership:
        """Make ``user`` a member; an invitation works once and only before it expires."""
        if self.accepted_at is not None:
            raise ValueError("this invitation was already used")
        if timezone.now() >= self.expires_at:
            raise ValueError(f"this invitation expired at {self.expires_at:%Y-%m-%d %H:%M} UTC")
        membership, _ = Membership.objects.get_or_create(team=self.team, user=user)
        self.accepted_at = timezone.now()
        self.save(update_fields=["accepted_at"])
        return membership
