"""The per-slice statistics stored for a split's results version (``leaderboard.slice_store``)."""

from __future__ import annotations

from django.contrib import admin

from leaderboard.admin.read_only import ReadOnly
from leaderboard.models import RankedSlices


@admin.register(RankedSlices)
class RankedSlicesAdmin(ReadOnly[RankedSlices]):
    """Stored by the task a results change sends, or by the first view without them:
    read-only; a deleted one is computed again by the dimension's next view."""

    list_display = ("split", "setting", "dimension", "results_version", "seconds")
    list_filter = ("setting",)
    search_fields = ("dimension",)
    raw_id_fields = ("split",)
    exclude = ("statistics",)
