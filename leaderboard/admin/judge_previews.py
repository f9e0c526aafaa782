"""Judge previews in the admin: read-only, the publications' log among them (who published
which judge, when, from which, why). They are started, resumed and published on their pages
(``leaderboard.views.judge_preview``), never edited here."""

from __future__ import annotations

from django.contrib import admin

from leaderboard.admin.read_only import ReadOnly
from leaderboard.models import JudgePreview, PreviewFlip, PreviewRun


@admin.register(JudgePreview)
class JudgePreviewAdmin(ReadOnly[JudgePreview]):
    list_display = (
        "pk", "split", "candidate_label", "current_label", "state", "runs_done", "judge_calls",
        "created_by", "published_at", "published_by", "published_from",
    )  # fmt: skip
    list_filter = ("state", "split__task__challenge")
    search_fields = ("candidate_label", "current_label", "published_why")
    list_select_related = ("split__task__challenge", "created_by", "published_by")


@admin.register(PreviewRun)
class PreviewRunAdmin(ReadOnly[PreviewRun]):
    list_display = ("preview", "run", "setting", "old_judge_id", "items", "flipped")
    raw_id_fields = ("preview", "run")


@admin.register(PreviewFlip)
class PreviewFlipAdmin(ReadOnly[PreviewFlip]):
    list_display = ("preview", "answer", "old_verdict", "new_verdict")
    list_filter = ("old_verdict", "new_verdict")
    raw_id_fields = ("preview", "answer")
