"""The models a challenge lets agents load by hub id (``workers.model_store``)."""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from leaderboard.models.challenge import Challenge


class HubModel(models.Model):
    """A model an organiser registered for a challenge: stored in each GPU node's model store
    and mounted into the containers of the submissions that declare it."""

    challenge = models.ForeignKey(Challenge, on_delete=models.CASCADE, related_name="hub_models")
    hub_id = models.CharField(
        max_length=200, help_text='e.g. "meta-llama/Llama-3.2-11B-Vision-Instruct"'
    )
    revision = models.CharField(max_length=128, default="main")
    snapshot = models.CharField(max_length=40, help_text="the stored files' content (sha1)")
    size_bytes = models.BigIntegerField(default=0)
    registered_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ("challenge", "hub_id", "revision")
        constraints = (
            models.UniqueConstraint(
                fields=["challenge", "hub_id", "revision"], name="hub_model_unique"
            ),
        )

    def __str__(self) -> str:
        return f"{self.hub_id}@{self.revision}"
