"""Admin of what organisers publish: challenges (with their search corpus's upload), phases,
tasks, splits (with upload) and their ranked boards."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.html import format_html_join
from django.utils.safestring import mark_safe

from evaluator import benchmarks
from leaderboard import publishing
from leaderboard.admin.settings_form import settings_fields, task_form
from leaderboard.corpora import CorpusImportError, import_corpus_archive
from leaderboard.judge_forecast import forecast_lines
from leaderboard.models import Challenge, HubModel, Phase, RankedBoard, Split, Task
from leaderboard.models.challenge import RUN_LIMITS, RUN_POLICIES
from leaderboard.pipeline.bundles import corpus_sha256
from leaderboard.splits import SplitImportError, import_split_bundle


class PhaseInline(admin.TabularInline[Phase, Challenge]):
    model = Phase
    extra = 0


class TaskInline(admin.TabularInline[Task, Challenge]):
    model = Task
    extra = 0
    fields = ("task_id", "name", "benchmark", "judge_kind", "entry_rule", "order")
    show_change_link = True


class ChallengeForm(forms.ModelForm[Challenge]):
    corpus_upload = forms.FileField(
        required=False,
        label="Import a search corpus",
        help_text="A tar (plain or compressed) of a corpus directory: images.jsonl, web.jsonl "
        "and images/ (docs/internals.md). Every entry is read as the search service reads it "
        "before it is stored; it replaces the corpus for runs that start from then on.",
    )

    class Meta:
        model = Challenge
        fields = "__all__"

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        upload = cleaned.get("corpus_upload")
        if upload is not None and self.instance.pk is None:
            raise forms.ValidationError(
                {"corpus_upload": "save the challenge first, then import its corpus"}
            )
        if upload is not None:
            try:
                self.corpus_import = import_corpus_archive(self.instance, upload)
            except CorpusImportError as exc:
                raise forms.ValidationError({"corpus_upload": f"not imported: {exc}"}) from exc
        return cleaned


@admin.register(Challenge)
class ChallengeAdmin(admin.ModelAdmin[Challenge]):
    """A challenge starts as a draft; the Publish action publishes it once its checklist
    (``leaderboard.publishing``) finds nothing wrong, and its page shows that checklist. Its
    search corpus is imported here (or by ``manage.py import_corpus``)."""

    form = ChallengeForm

    list_display = ("name", "slug", "is_published", "created_at")
    list_filter = ("is_published",)
    search_fields = ("name", "slug", "description")
    prepopulated_fields: ClassVar[dict[str, Sequence[str]]] = {"slug": ("name",)}
    filter_horizontal = ("organisers",)
    inlines = (PhaseInline, TaskInline)
    readonly_fields = ("is_published", "publish_checklist", "search_corpus", "logo", "overall")
    actions = ("publish", "unpublish")

    @admin.display(description="search corpus")
    def search_corpus(self, challenge: Challenge) -> str:
        sha256 = corpus_sha256(challenge) if challenge.pk is not None else None
        return f"sha256 {sha256}" if sha256 else "none imported"

    def save_model(
        self, request: HttpRequest, obj: Challenge, form: forms.ModelForm[Challenge], change: bool
    ) -> None:
        super().save_model(request, obj, form, change)
        imported = getattr(form, "corpus_import", None)
        if imported is not None:
            self.message_user(request, f"{obj.name}: {imported}", messages.SUCCESS)

    @admin.display(description="before publishing")
    def publish_checklist(self, challenge: Challenge) -> str:
        if challenge.pk is None:
            return "save the challenge, add its tasks and splits, then publish it"
        problems = publishing.publish_problems(challenge)
        if not problems:
            return "nothing stops publishing" if not challenge.is_published else "published"
        return format_html_join(mark_safe("<br>"), "✗ {}", ((p,) for p in problems))

    @admin.action(description="Publish (after the checklist)")
    def publish(self, request: HttpRequest, queryset: QuerySet[Challenge]) -> None:
        for challenge in queryset:
            try:
                publishing.publish(challenge)
            except ValidationError as exc:
                for problem in exc.messages:
                    self.message_user(request, f"{challenge.name}: {problem}", messages.ERROR)
                continue
            self.message_user(request, f"{challenge.name} is published", messages.SUCCESS)

    @admin.action(description="Unpublish (back to a draft)")
    def unpublish(self, request: HttpRequest, queryset: QuerySet[Challenge]) -> None:
        count = queryset.update(is_published=False)
        self.message_user(request, f"{count} back to draft", messages.SUCCESS)


@admin.register(Task)
class TaskAdmin(admin.ModelAdmin[Task]):
    list_display = (
        "__str__",
        "benchmark",
        "judge_kind",
        "judge_model",
        "primary_metric",
        "entry_rule",
        "gpu_class",
        "agent_runtime",
    )
    list_filter = ("benchmark", "judge_kind", "entry_rule", "challenge")
    search_fields = ("task_id", "name", "challenge__slug")
    fieldsets = (
        (None, {"fields": ("challenge", "task_id", "name", "description", "benchmark", "order")}),
        (
            "Limits",
            {
                "fields": (
                    *RUN_LIMITS,
                    *RUN_POLICIES,
                    "image_search_enabled",
                    "web_search_enabled",
                    "gpu_class",
                    "agent_runtime",
                )
            },
        ),
        (
            "Judging and scoring",
            {
                "fields": (
                    "judge_kind",
                    "judge_model",
                    "judge_revision",
                    "judge_endpoint",
                    "vision_judge_endpoint",
                    "primary_metric",
                    "entry_rule",
                    "ranked_by",
                    "multiple_comparisons",
                    "final_repeats",
                    "judge_forecast",
                )
            },
        ),
        (
            "Submissions per team",
            {
                "fields": (
                    "quota_per_day",
                    "quota_total",
                    "quota_concurrent",
                    "quota_back_on_cancel",
                    "max_artifact_bytes",
                    "splits_selectable",
                )
            },
        ),
    )

    readonly_fields = ("judge_forecast",)

    @admin.display(description="Judge forecast")
    def judge_forecast(self, task: Task) -> str:
        """Per imported split, the judge calls a submission costs and how long they take
        (``leaderboard.judge_forecast``), with the task's saved settings."""
        return format_html_join(mark_safe("<br>"), "{}", ((line,) for line in forecast_lines(task)))

    def _benchmark(self, request: HttpRequest, obj: Task | None) -> str:
        chosen = request.POST.get("benchmark") or request.GET.get("benchmark")
        if chosen and benchmarks.is_known(chosen):
            return chosen
        return obj.benchmark if obj is not None else benchmarks.DEFAULT

    def get_form(
        self, request: HttpRequest, obj: Task | None = None, change: bool = False, **kwargs: Any
    ) -> type[forms.ModelForm[Task]]:
        kwargs["form"] = task_form(self._benchmark(request, obj))
        return super().get_form(request, obj, change, **kwargs)

    def get_fieldsets(self, request: HttpRequest, obj: Task | None = None) -> Any:
        generated = tuple(settings_fields(self._benchmark(request, obj)))
        return (*self.fieldsets, ("Protocol settings", {"fields": generated}))


class SplitForm(forms.ModelForm[Split]):
    upload = forms.FileField(
        required=False,
        help_text="a tar of the split directory (Podium format or Hugging Face layout); "
        "validated, then stored as the bundle with its sha256",
    )

    class Meta:
        model = Split
        fields = ("task", "kind", "visibility", "reveal_at")

    def clean(self) -> dict[str, Any]:
        super().clean()  # ModelForm.clean returns self.cleaned_data, never None
        cleaned = self.cleaned_data
        upload, task, kind = cleaned.get("upload"), cleaned.get("task"), cleaned.get("kind")
        if upload is None and not (self.instance.pk and self.instance.bundle):
            raise forms.ValidationError("upload the split's data bundle")
        if not self.instance.is_current:
            if upload is not None:
                raise forms.ValidationError(
                    {"upload": f"{self.instance} is superseded: upload to its current version"}
                )
        elif (
            Split.objects.current()
            .filter(task=task, kind=kind)
            .exclude(pk=self.instance.pk)
            .exists()
        ):
            raise forms.ValidationError(f"{task} already has a {kind} split: edit that one")
        if upload is not None and task is not None and kind:
            # Fields are valid by now: validate the bundle and store it. The import creates or
            # updates the split's row; the form then writes its own fields onto that row.
            try:
                self.instance = import_split_bundle(task, kind, upload)
            except SplitImportError as e:
                raise forms.ValidationError({"upload": str(e)}) from e
        return cleaned


@admin.register(Split)
class SplitAdmin(admin.ModelAdmin[Split]):
    form = SplitForm
    list_display = (
        "__str__",
        "kind",
        "version",
        "superseded_at",
        "visibility",
        "reveal_at",
        "groups",
        "items",
        "short_sha256",
        "imported_at",
    )
    list_filter = ("kind", "visibility", "task__challenge")
    search_fields = ("task__task_id", "task__challenge__slug", "sha256")
    readonly_fields = ("sha256", "groups", "items", "imported_at", "version", "superseded_at")

    @admin.display(description="sha256")
    def short_sha256(self, split: Split) -> str:
        return split.sha256[:12]


@admin.register(RankedBoard)
class RankedBoardAdmin(admin.ModelAdmin[RankedBoard]):
    """Ranked when the split's results change (``leaderboard.board_store``): read-only; a
    deleted one is ranked again by the board's next view."""

    list_display = ("split", "setting", "__str__")
    list_filter = ("setting",)
    raw_id_fields = ("split",)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


@admin.register(Phase)
class PhaseAdmin(admin.ModelAdmin[Phase]):
    list_display = ("name", "challenge", "starts_at", "ends_at", "quota_per_day", "quota_total")
    list_filter = ("challenge",)
    search_fields = ("name", "challenge__name")


@admin.register(HubModel)
class HubModelAdmin(admin.ModelAdmin[HubModel]):
    """The models a challenge provides. They are added with ``manage.py register_model`` on the
    worker nodes (the files go into each node's model store); here they are listed, and removed
    to stop new submissions from declaring them."""

    list_display = (
        "hub_id",
        "revision",
        "challenge",
        "short_snapshot",
        "size_bytes",
        "registered_at",
    )
    list_filter = ("challenge",)
    search_fields = ("hub_id", "challenge__slug")
    readonly_fields = ("challenge", "hub_id", "revision", "snapshot", "size_bytes", "registered_at")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    @admin.display(description="snapshot")
    def short_snapshot(self, model: HubModel) -> str:
        return model.snapshot[:12]
