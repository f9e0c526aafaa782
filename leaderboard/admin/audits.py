"""Admin of judge audits: listed and deleted here, opened, labelled and finished on their own
pages (``leaderboard/views/audits.py``), so nothing here changes what was sampled or labelled."""

from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html

from leaderboard.models import AuditItem, AuditLabel, ChallengeLabeller, JudgeAudit


@admin.register(JudgeAudit)
class JudgeAuditAdmin(admin.ModelAdmin[JudgeAudit]):
    list_display = ("pk", "split", "judge_id", "prompt_version", "size", "opened_at", "finished_at",
                    "page")  # fmt: skip
    list_filter = ("split__task__challenge", "judge_id", "prompt_version")
    list_select_related = ("split__task__challenge",)
    search_fields = ("judge_id", "prompt_version")

    @admin.display(description="results")
    def page(self, audit: JudgeAudit) -> str:
        return format_html(
            '<a href="{}">results</a>', reverse("leaderboard:audit", args=[audit.pk])
        )

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


@admin.register(AuditLabel)
class AuditLabelAdmin(admin.ModelAdmin[AuditLabel]):
    list_display = ("item", "labeller", "verdict", "note", "labelled_at")
    list_filter = ("item__audit__split__task__challenge", "verdict")
    list_select_related = ("item", "labeller")
    search_fields = ("note", "labeller__username")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


@admin.register(AuditItem)
class AuditItemAdmin(admin.ModelAdmin[AuditItem]):
    list_display = ("audit", "position", "item_key", "slice_value", "judge_verdict")
    list_filter = ("audit__split__task__challenge", "judge_verdict")
    list_select_related = ("audit",)
    search_fields = ("item_key", "question", "response")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


@admin.register(ChallengeLabeller)
class ChallengeLabellerAdmin(admin.ModelAdmin[ChallengeLabeller]):
    """Who was made a labeller of a challenge's audits: a record that bars them from taking
    part in it for the challenge's lifetime, so never added, edited or removed by hand."""

    list_display = ("invited_at", "user", "challenge", "invited_by")
    list_filter = ("challenge",)
    list_select_related = ("user", "challenge", "invited_by")
    search_fields = ("user__username", "challenge__slug")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False
