"""Admin of submissions, runs and what runs produce (answers, verdicts, scores, cache)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.db import models
from django.db.models import QuerySet
from django.http import HttpRequest
from django.template.response import TemplateResponse

from leaderboard import board_store, run_actions
from leaderboard.admin.read_only import Ledger, ReadOnly
from leaderboard.judge_choice import UnknownJudge, chosen_judge, judge_options
from leaderboard.models import (
    AnswerSimilarity,
    EntryComparison,
    EvaluationRun,
    Headline,
    ItemAnswer,
    ItemVerdict,
    JudgmentRecord,
    RunAction,
    RunUnits,
    SliceScore,
    Split,
    Submission,
    SubmissionAction,
    SubmissionTask,
    Task,
    UnitSlices,
)
from leaderboard.run_actions import RunActionRefused


class RunInline(admin.TabularInline[EvaluationRun, Submission]):
    model = EvaluationRun
    extra = 0
    fields = ("task", "split", "state", "items_done", "items_total", "failure_reason")
    readonly_fields = fields
    show_change_link = True
    can_delete = False


class ChosenTaskInline(admin.TabularInline[SubmissionTask, Submission]):
    """The tasks and splits the team chose: a record of the submission, never edited."""

    model = SubmissionTask
    extra = 0
    fields = ("task", "split_kinds")
    readonly_fields = fields
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


@admin.register(SubmissionTask)
class SubmissionTaskAdmin(admin.ModelAdmin[SubmissionTask]):
    """Which tasks (and splits; none listed: every split) each submission is evaluated on."""

    list_display = ("submission", "task", "split_kinds")
    list_filter = ("task__challenge",)
    search_fields = ("submission__method_name", "submission__team__name", "task__task_id")
    list_select_related = ("submission__team", "task")
    readonly_fields = ("submission", "task", "split_kinds")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False


@admin.register(Submission)
class SubmissionAdmin(admin.ModelAdmin[Submission]):
    list_display = (
        "pk",
        "method_name",
        "team",
        "challenge",
        "artifact_kind",
        "state",
        "standing",
        "is_baseline",
        "chosen_for_final",
        "consumes_quota",
        "created_at",
    )
    list_filter = ("state", "artifact_kind", "is_baseline", "consumes_quota", "challenge")
    search_fields = ("method_name", "team__name", "image_digest", "registry_ref")
    date_hierarchy = "created_at"
    inlines = (ChosenTaskInline, RunInline)
    # giving the quota back and evaluating on new splits: logged actions of the submissions panel
    actions = ("mark_baseline",)
    readonly_fields = ("standing",)  # changed on the submissions panel, logged
    formfield_overrides: ClassVar[dict[type[models.Field[Any, Any]], dict[str, str]]] = {
        models.URLField: {"assume_scheme": "https"}
    }

    @admin.action(description="Mark as baseline entries")
    def mark_baseline(self, request: HttpRequest, queryset: QuerySet[Submission]) -> None:
        count = queryset.update(is_baseline=True)
        splits = Split.objects.filter(runs__submission__in=queryset).values_list("pk", flat=True)
        board_store.results_changed(*splits)
        self.message_user(request, f"{count} marked as baseline")


_RunAction = Callable[
    [admin.ModelAdmin[EvaluationRun], HttpRequest, QuerySet[EvaluationRun]], TemplateResponse | None
]


def _run_action(
    label: str, perform: Callable[..., list[str]], help_text: str, judges: bool = False
) -> _RunAction:
    """An admin action asking why (and, with ``judges``, which judge) before it does
    ``perform`` (``leaderboard.run_actions``)."""

    def action(
        modeladmin: admin.ModelAdmin[EvaluationRun],
        request: HttpRequest,
        queryset: QuerySet[EvaluationRun],
    ) -> TemplateResponse | None:
        error = ""
        tasks = Task.objects.filter(challenge__tasks__runs__in=queryset).distinct()
        if "why" in request.POST:
            try:
                chosen = {}
                if judges:
                    chosen["judge"] = chosen_judge(request.POST.get("judge", ""), tasks)
                refused = perform(queryset, request.user, request.POST["why"], **chosen)
            except (RunActionRefused, UnknownJudge) as exc:
                error = str(exc)
            else:
                done = queryset.count() - len(refused)
                modeladmin.message_user(request, f"{label}: {done} run(s)", messages.SUCCESS)
                for line in refused:
                    modeladmin.message_user(request, f"not done: {line}", messages.WARNING)
                return None
        context = {
            **modeladmin.admin_site.each_context(request),
            "title": f"{label} {queryset.count()} run(s)?",
            "label": label,
            "help": help_text,
            "runs": list(queryset),
            "judges": judge_options(tasks) if judges else None,
            "error": error,
            "action": request.POST["action"],
            "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
            "opts": modeladmin.model._meta,
        }
        return TemplateResponse(request, "admin/leaderboard/run_action.html", context)

    action.__name__ = perform.__name__
    return admin.action(description=f"{label}…")(action)


class RunActionInline(admin.TabularInline[RunAction, EvaluationRun]):
    model = RunAction
    extra = 0
    fields = ("at", "kind", "by", "from_state", "why", "detail")
    readonly_fields = fields
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


@admin.register(EvaluationRun)
class EvaluationRunAdmin(admin.ModelAdmin[EvaluationRun]):
    """Runs are read here, never edited: organisers act through the actions, which are logged."""

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
    inlines = (RunActionInline,)
    actions = (
        _run_action(
            "Re-run",
            run_actions.rerun,
            "A finished run starts again from nothing: its answers, verdicts and scores are "
            "deleted. A run still in progress is refused: cancel it first.",
        ),
        _run_action(
            "Re-judge",
            run_actions.rejudge,
            "A done run's verdicts are deleted and judged again, by the task's judge as it is "
            "configured now or by the judge chosen here (kept for the run's later judging); "
            "the judgment cache answers what that judge already judged; its answers stay. It "
            "leaves the leaderboard until it is scored again.",
            judges=True,
        ),
        _run_action(
            "Cancel",
            run_actions.cancel,
            "An unfinished run stops; its team reads that an organiser cancelled it.",
        ),
    )

    def get_readonly_fields(self, request: HttpRequest, obj: object = None) -> list[str]:
        return [field.name for field in self.model._meta.fields]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def get_actions(self, request: HttpRequest) -> dict[str, Any]:
        # no "Delete selected": organisers act through the logged actions (re-run, cancel)
        found = super().get_actions(request)
        found.pop("delete_selected", None)
        return found


@admin.register(RunAction)
class RunActionAdmin(Ledger[RunAction]):
    list_display = ("at", "kind", "run", "by", "from_state", "why", "detail")
    list_filter = ("kind", "run__task__challenge")
    search_fields = ("why", "by__username")
    list_select_related = ("run__submission__team", "run__split__task__challenge", "by")


@admin.register(SubmissionAction)
class SubmissionActionAdmin(Ledger[SubmissionAction]):
    """Read only: the submissions panel takes these actions (``leaderboard.standing``)."""

    list_display = ("at", "kind", "submission", "by", "from_standing", "why")
    list_filter = ("kind", "submission__challenge")
    list_select_related = ("submission__team", "by")


@admin.register(ItemAnswer)
class ItemAnswerAdmin(admin.ModelAdmin[ItemAnswer]):
    list_display = ("run", "group", "item_key", "position", "outcome", "latency_s")
    list_filter = ("outcome",)
    search_fields = ("group", "item_key", "response")
    list_select_related = ("run__submission__team", "run__split__task__challenge")
    raw_id_fields = ("run",)


@admin.register(ItemVerdict)
class ItemVerdictAdmin(admin.ModelAdmin[ItemVerdict]):
    list_display = ("answer", "verdict", "judge_id", "prompt_version")
    list_filter = ("verdict", "judge_id")
    search_fields = ("answer__item_key", "judge_id")
    raw_id_fields = ("answer",)


@admin.register(SliceScore)
class SliceScoreAdmin(admin.ModelAdmin[SliceScore]):
    list_display = ("run", "dimension", "value", "count", "primary")
    list_filter = ("dimension",)
    search_fields = ("dimension", "value")
    raw_id_fields = ("run",)


@admin.register(Headline)
class HeadlineAdmin(admin.ModelAdmin[Headline]):
    """Copied from the run's all/all SliceScore row when its scores are stored: read-only."""

    list_display = ("run", "split", "setting", "count", "primary")
    list_filter = ("setting",)
    raw_id_fields = ("run", "split")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


@admin.register(RunUnits)
class RunUnitsAdmin(ReadOnly[RunUnits]):
    """Kept with the run's scores (``scores.store_scores``): read-only."""

    list_display = ("run", "metric", "__str__")
    raw_id_fields = ("run",)
    exclude = ("values",)


@admin.register(UnitSlices)
class UnitSlicesAdmin(ReadOnly[UnitSlices]):
    """Which slice value each unit of a split belongs to, kept by the scoring stage
    (``leaderboard.unit_slices``): read-only."""

    list_display = ("__str__",)
    search_fields = ("digest",)
    exclude = ("dimensions",)


@admin.register(EntryComparison)
class EntryComparisonAdmin(admin.ModelAdmin[EntryComparison]):
    list_display = ("run_a", "run_b", "metric", "difference", "ci_low", "ci_high", "separable")
    list_filter = ("separable", "metric")
    raw_id_fields = ("run_a", "run_b", "split")


@admin.register(JudgmentRecord)
class JudgmentRecordAdmin(admin.ModelAdmin[JudgmentRecord]):
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


@admin.register(AnswerSimilarity)
class AnswerSimilarityAdmin(admin.ModelAdmin[AnswerSimilarity]):
    """Flagged by the scoring stage (``leaderboard.duplicates``); read here, never edited."""

    list_display = ("run_a", "run_b", "split", "share", "alike", "items", "computed_at")
    list_filter = ("split__task__challenge",)
    raw_id_fields = ("run_a", "run_b", "split")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False
