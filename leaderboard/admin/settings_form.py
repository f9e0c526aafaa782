"""A task's benchmark settings as form fields, generated from the benchmark's JSON Schema.

Each property of ``Benchmark.settings_schema`` becomes one field (``setting_<name>``): an enum a
choice, a number or integer a number field with its bounds, a boolean a checkbox, an array of
strings a comma-separated text, a string a text (optional when the schema allows null: left
blank, the setting is left out); title, description and default become label, help and initial.
The form writes them into ``Task.settings``; ``Task.clean`` checks the result against the same
schema, so what the admin accepts is what the pipeline runs with.
"""

from __future__ import annotations

from typing import Any

from django import forms

from evaluator.benchmarks import benchmark_class, get_benchmark
from leaderboard.models import Task

PREFIX = "setting_"


def _field(spec: dict[str, Any]) -> forms.Field:
    common: dict[str, Any] = {
        "label": spec.get("title"),
        "help_text": spec.get("description", ""),
        "initial": spec.get("default"),
    }
    kind = spec.get("type")
    if isinstance(kind, list) and "null" in kind:
        common["required"] = False
    if "enum" in spec:
        return forms.ChoiceField(choices=[(v, v) for v in spec["enum"]], **common)
    if kind in ("number", "integer"):
        field = forms.FloatField if kind == "number" else forms.IntegerField
        return field(min_value=spec.get("minimum"), max_value=spec.get("maximum"), **common)
    if kind == "boolean":
        return forms.BooleanField(required=False, **common)
    if kind == "array":
        common["initial"] = ", ".join(map(str, spec.get("default", [])))
        return forms.CharField(**common)
    return forms.CharField(**common)


def settings_fields(benchmark: str) -> dict[str, forms.Field]:
    schema = benchmark_class(benchmark).settings_schema
    return {PREFIX + name: _field(spec) for name, spec in schema["properties"].items()}


class TaskForm(forms.ModelForm[Task]):
    """The task's fields, plus its benchmark's settings (subclassed per benchmark by the admin)."""

    class Meta:
        model = Task
        exclude = ("settings",)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        primary = self.fields.get("primary_metric")
        if self.instance.pk is None and isinstance(primary, forms.ChoiceField):
            self.initial["primary_metric"] = primary.initial  # not the model's default
        schema = benchmark_class(self.instance.benchmark).settings_schema["properties"]
        for name, value in (self.instance.settings or {}).items():
            if PREFIX + name in self.fields:
                shown = ", ".join(value) if schema[name].get("type") == "array" else value
                self.fields[PREFIX + name].initial = shown

    def clean(self) -> dict[str, Any]:
        super().clean()  # ModelForm.clean returns self.cleaned_data, never None
        cleaned = self.cleaned_data
        benchmark = cleaned.get("benchmark") or self.instance.benchmark
        schema = benchmark_class(benchmark).settings_schema["properties"]
        settings: dict[str, Any] = {}
        for name, spec in schema.items():
            value = cleaned.get(PREFIX + name)
            if value is None or (value == "" and "null" in spec.get("type", ())):
                continue
            if spec.get("type") == "array":
                value = [part.strip() for part in str(value).split(",") if part.strip()]
            settings[name] = value
        self.instance.settings = settings
        return cleaned


def primary_metric_field(benchmark: str) -> forms.ChoiceField:
    """The primary metric as a choice among the metrics that rank ``benchmark``'s entries with
    its default settings (``Benchmark.ranking_metrics``; ``Task.clean`` checks the choice
    against the task's own settings), the benchmark's ``primary`` first chosen."""
    declared = get_benchmark(benchmark)
    return forms.ChoiceField(
        choices=[(m.name, f"{m.label} ({m.name})") for m in declared.ranking_metrics()],
        initial=declared.primary,
        help_text="ranks the leaderboard's entries",
    )


def task_form(benchmark: str) -> type[TaskForm]:
    """A TaskForm class carrying ``benchmark``'s setting fields and its primary metric's
    choices."""
    fields: dict[str, Any] = {
        **settings_fields(benchmark),
        "primary_metric": primary_metric_field(benchmark),
    }
    return type(f"TaskForm_{benchmark.replace('-', '_')}", (TaskForm,), fields)
