"""API tokens: several per account, each named, kept as a digest, expiring (django-rest-knox).

Knox stores the SHA-512 digest of a key and its first 15 characters (to find it), never the key:
the key is shown once, when the token is made (``leaderboard.api_tokens``). This model is knox's
token model (``KNOX_TOKEN_MODEL``) with the two fields the account page shows besides knox's
``created`` and ``expiry``: the name its owner gave it and when it was last used.
"""

from __future__ import annotations

from django.db import models
from knox.models import AbstractAuthToken

NAME_MAX_LENGTH = 100


class ApiToken(AbstractAuthToken):
    name = models.CharField(max_length=NAME_MAX_LENGTH)
    last_used = models.DateTimeField(
        null=True, blank=True, help_text="to the minute: a use within a minute of it is not written"
    )

    class Meta:
        ordering = ("-created",)
        verbose_name = "API token"

    def __str__(self) -> str:
        return f"{self.name} ({self.user})"
