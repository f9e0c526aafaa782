"""Admin of the challenge bundles imported (``docs/challenge-bundle.md``): read only."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from leaderboard.models import ChallengeVersion


@admin.register(ChallengeVersion)
class ChallengeVersionAdmin(admin.ModelAdmin):
    """The bundles imported (``docs/challenge-bundle.md``): read only."""

    list_display = ("challenge", "number", "imported_at", "imported_by", "via")
    list_filter = ("via",)
    search_fields = ("challenge__slug",)
    readonly_fields = ("challenge", "number", "imported_at", "imported_by", "via", "changes",
                       "document")  # fmt: skip

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
