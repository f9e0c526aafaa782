"""Admin of submissions, runs and what runs produce (answers, verdicts, scores, cache)."""

from __future__ import annotations

from typing import ClassVar

from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.db import models

from leaderboard.models import (
    EntryComparison,
    EvaluationRun,
    ItemAnswer,
    ItemVerdict,
    JudgmentRecord,
    SliceScore,
    Split,
    Submission,
)
from leaderboard.submitting import add_missing_runs


class RunInline(admin.TabularInline):
    model = EvaluationRun
    extra = 0
    fields = ("task", "split", "state", "items_done", "items_total", "failure_reason")
    readonly_fields = fields
    show_change_link = True
    can_delete = False


@admin.register(Submission)
class SubmissionAdmin(admin.ModelAdmin):
    list_display = (
        "pk",
        "method_name",
        "team",
        "challenge",
        "artifact_kind",
        "state",
        "is_baseline",
        "chosen_for_final",
        "consumes_quota",
        "created_at",
    )
    list_filter = ("state", "artifact_kind", "is_baseline", "consumes_quota", "challenge")
    search_fields = ("method_name", "team__name", "image_digest", "registry_ref")
    date_hierarchy = "created_at"
    inlines = (RunInline,)
    actions = ("mark_baseline", "refund_quota", "evaluate_missing")
    formfield_overrides: ClassVar[dict] = {models.URLField: {"assume_scheme": "https"}}

    @admin.action(description="Mark as baseline entries")
    def mark_baseline(self, request, queryset) -> None:
        count = queryset.update(is_baseline=True)
        splits = Split.objects.filter(runs__submission__in=queryset).values_list("pk", flat=True)
        Split.results_changed(*splits)
        self.message_user(request, f"{count} marked as baseline")

    @admin.action(description="Evaluate on splits and settings added since it was submitted")
    def evaluate_missing(self, request, queryset) -> None:
        try:
            added = sum(len(add_missing_runs(submission)) for submission in queryset)
        except ValidationError as exc:
            self.message_user(request, "; ".join(exc.messages), messages.ERROR)
            return
        self.message_user(request, f"{added} run(s) added and queued", messages.SUCCESS)

    @admin.action(description="Refund quota (Podium caused the failure)")
    def refund_quota(self, request, queryset) -> None:
        count = queryset.update(consumes_quota=False)
        self.message_user(request, f"{count} refunded", messages.SUCCESS)


@admin.register(EvaluationRun)
class EvaluationRunAdmin(admin.ModelAdmin):
    list_display = (
        "pk",
        "submission",
        "split",
        "state",
        "stage",
        "items_done",
        "items_total",
        "attempt",
        "worker_id",
        "heartbeat_at",
        "scores_complete",
    )
    list_filter = ("state", "scores_complete", "split__kind", "task__challenge")
    search_fields = ("submission__method_name", "submission__team__name", "worker_id")
    list_select_related = ("submission__team", "split__task__challenge")
    readonly_fields = (
        "state",
        "stage",
        "started_at",
        "finished_at",
        "heartbeat_at",
        "attempt",
        "agent_log",
    )


@admin.register(ItemAnswer)
class ItemAnswerAdmin(admin.ModelAdmin):
    list_display = ("run", "group", "item_key", "position", "outcome", "latency_s")
    list_filter = ("outcome",)
    search_fields = ("group", "item_key", "response")
    list_select_related = ("run__submission__team", "run__split__task__challenge")
    raw_id_fields = ("run",)


@admin.register(ItemVerdict)
class ItemVerdictAdmin(admin.ModelAdmin):
    list_display = ("answer", "verdict", "judge_id", "prompt_version")
    list_filter = ("verdict", "judge_id")
    search_fields = ("answer__item_key", "judge_id")
    raw_id_fields = ("answer",)


@admin.register(SliceScore)
class SliceScoreAdmin(admin.ModelAdmin):
    list_display = ("run", "dimension", "value", "count", "primary")
    list_filter = ("dimension",)
    search_fields = ("dimension", "value")
    raw_id_fields = ("run",)


@admin.register(EntryComparison)
class EntryComparisonAdmin(admin.ModelAdmin):
    list_display = ("run_a", "run_b", "metric", "difference", "ci_low", "ci_high", "separable")
    list_filter = ("separable", "metric")
    raw_id_fields = ("run_a", "run_b", "split")


@admin.register(JudgmentRecord)
class JudgmentRecordAdmin(admin.ModelAdmin):
    list_display = ("key", "verdict", "judge_id", "prompt_version", "created_at")
    list_filter = ("verdict", "judge_id", "prompt_version")
    search_fields = ("key", "raw")
    readonly_fields = (
        "key",
        "verdict",
        "judge_id",
        "prompt_version",
        "prompt_hash",
        "raw",
        "created_at",
    )
