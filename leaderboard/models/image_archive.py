"""An agent image's archive in storage (``agent-images/<image ID>.tar``): who owes it, whether
it is there, and whether another node is waiting for it (``leaderboard/pipeline/image_store.py``;
removed by the retention sweep, ``leaderboard/image_retention.py``)."""

from __future__ import annotations

from django.db import models


class ImageArchive(models.Model):
    class State(models.TextChoices):
        PENDING = "pending", "owed by its node"  # the node has the image; not in storage yet
        STORED = "stored", "in storage"
        GONE = "gone", "not in storage"  # swept, or its node lost the image: nobody owes it

    image_id = models.CharField(max_length=100, unique=True, help_text="sha256:...")
    state = models.CharField(max_length=16, choices=State, default=State.PENDING)
    node = models.CharField(
        max_length=200, blank=True, help_text="the node whose engine has the image and owes it"
    )
    wanted_at = models.DateTimeField(
        null=True, blank=True, help_text="another node waits for it: export it now"
    )
    size = models.BigIntegerField(null=True, blank=True)
    stored_at = models.DateTimeField(null=True, blank=True)
    swept_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = (
            models.Index(fields=["node", "state"], name="imagearchive_node_state"),
            models.Index(fields=["state"], name="imagearchive_state"),
        )

    def __str__(self) -> str:
        return f"{self.image_id} ({self.state}{', ' + self.node if self.node else ''})"
