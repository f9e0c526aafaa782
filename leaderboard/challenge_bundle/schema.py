"""The JSON Schema of ``challenge.yaml`` (``BUNDLE_VERSION`` 1), built from Podium's own models
and every benchmark's ``settings_schema``, so an editor checks the file as it is written
(``/schemas/challenge-bundle.json``, ``manage.py challenge schema``) and the loader enforces the
same document. Unknown keys are refused everywhere (``additionalProperties: false``).

``TASK_FIELDS`` maps a task's place in the file to its model field: the one table the loader,
the importer and the exporter read.
"""

from __future__ import annotations

import json
from typing import Any

from django.core.validators import MinValueValidator
from django.db import models
from django.db.backends.base.operations import BaseDatabaseOperations

from evaluator.benchmarks import benchmark_class, names
from leaderboard.models import Challenge, Phase, Split, Task
from leaderboard.models.challenge import TASK_LIMITS, AgentRuntime
from leaderboard.overall import DEFAULT_TITLE, METHODS

BUNDLE_VERSION = 1
SCHEMA_ID = "urn:podium:challenge-bundle:1"
PAGES = ("overview", "rules", "evaluation", "data", "participate")
# Patterns end with ``$(?!\n)``: the validator's ``re.search`` lets a bare ``$`` match before a
# final line break ("slug\n"); an editor's ECMAScript regex reads it the same as ``$``.
SLUG = r"^[a-z0-9]+(?:-[a-z0-9]+)*$(?!\n)"
SHA256 = r"^[0-9a-f]{64}$(?!\n)"

# (place in the task's mapping, Task field)
TASK_FIELDS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("name",), "name"),
    (("description",), "description"),
    (("protocol",), "benchmark"),
    (("settings",), "settings"),
    *((("limits", name), name) for name in TASK_LIMITS),
    (("runtime",), "agent_runtime"),
    (("search", "image"), "image_search_enabled"),
    (("search", "web"), "web_search_enabled"),
    (("judge", "kind"), "judge_kind"),
    (("judge", "endpoint"), "judge_endpoint"),
    (("judge", "model"), "judge_model"),
    (("judge", "revision"), "judge_revision"),
    (("judge", "vision_endpoint"), "vision_judge_endpoint"),
    (("primary_metric",), "primary_metric"),
    (("entry_rule",), "entry_rule"),
    (("tie_rule",), "tie_rule"),
    (("ranked_by",), "ranked_by"),
    (("multiple_comparisons",), "multiple_comparisons"),
    (("final_repeats",), "final_repeats"),
    (("timeout_policy",), "timeout_policy"),
    (("error_policy",), "error_policy"),
    (("quotas", "per_day"), "quota_per_day"),
    (("quotas", "total"), "quota_total"),
    (("quotas", "concurrent"), "quota_concurrent"),
    (("quotas", "back_on_cancel"), "quota_back_on_cancel"),
    (("splits_selectable",), "splits_selectable"),
)


def _object(properties: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(required),
        "additionalProperties": False,
    }


def _text(description: str = "", **more: Any) -> dict[str, Any]:
    return (
        {"type": "string", "description": description, **more}
        if description
        else {
            "type": "string",
            **more,
        }
    )


def _count(
    model: type[models.Model], name: str, minimum: int = 1, nullable: bool = False
) -> dict[str, Any]:
    """An integer stored in ``model``'s field ``name``: at most what its column holds."""
    kind: Any = ["integer", "null"] if nullable else "integer"
    return {"type": kind, "minimum": minimum, "maximum": _column_max(model, name)}


def _column_max(model: type[models.Model], name: str) -> int:
    """The largest value the database column of an integer field holds (PostgreSQL's integer:
    2**31 - 1), whatever the backend."""
    field = model._meta.get_field(name)
    assert isinstance(field, models.Field)
    return BaseDatabaseOperations.integer_field_ranges[field.get_internal_type()][1]


def _column_length(model: type[models.Model], name: str) -> int:
    """The most characters ``model``'s text field ``name`` holds."""
    field = model._meta.get_field(name)
    assert isinstance(field, models.CharField) and field.max_length is not None
    return field.max_length


def _limit(name: str) -> dict[str, Any]:
    """A task limit's schema, from its ``Task`` field: a whole number up to what its column
    holds; a time in seconds (a number) from its validator's least value up to what
    ``total_wall_s`` holds (no more than the whole run); a text up to its column's length."""
    field = Task._meta.get_field(name)
    if isinstance(field, models.CharField):
        return _text(maxLength=_column_length(Task, name))
    if isinstance(field, models.FloatField):
        least = next(v.limit_value for v in field.validators if isinstance(v, MinValueValidator))
        return {"type": "number", "minimum": least, "maximum": _column_max(Task, "total_wall_s")}
    return _count(Task, name)


def _moment(nullable: bool = False) -> dict[str, Any]:
    kind: Any = ["string", "null"] if nullable else "string"
    return {"type": kind, "format": "date-time", "description": "ISO 8601 with a time zone"}


def _file(description: str) -> dict[str, Any]:
    return _text(f"a path inside the bundle: {description}", minLength=1, pattern=r"^[^/]")


def _judge() -> dict[str, Any]:
    return _object(
        {
            "kind": {"enum": Task.JudgeKind.values},
            "endpoint": _text(
                "a judge endpoint configured on the server (its key is configured with it)",
                minLength=1,
                maxLength=_column_length(Task, "judge_endpoint"),
            ),
            "model": _text(maxLength=_column_length(Task, "judge_model")),
            "revision": _text(maxLength=_column_length(Task, "judge_revision")),
            "vision_endpoint": _text(
                "a judge endpoint configured on the server whose model sees images: judges the "
                "prompts that carry images (M2RAG); its model is the endpoint's",
                maxLength=_column_length(Task, "vision_judge_endpoint"),
            ),
        },
        ("kind",),
    )


def _task() -> dict[str, Any]:
    by_benchmark = [
        {
            "if": {"properties": {"protocol": {"const": name}}},
            "then": {"properties": {"settings": benchmark_class(name).settings_schema}},
        }
        for name in names()
    ]
    split = _object(
        {
            "kind": {"enum": Split.Kind.values},
            "files": _file("the split's directory, or a tar of it (.tar, .tar.gz)"),
            "sha256": _text("the stored split bundle's digest, checked on import", pattern=SHA256),
            "visibility": {"enum": Split.Visibility.values},
            "reveal_at": _moment(nullable=True),
        },
        ("kind", "files"),
    )
    task = _object(
        {
            "id": _text("the task's id, e.g. multi-turn-qa", pattern=SLUG, maxLength=100),
            "name": _text(minLength=1, maxLength=200),
            "description": _text(),
            "protocol": {"enum": list(names())},
            "settings": {"type": "object", "description": "the benchmark's own settings"},
            "limits": _object({name: _limit(name) for name in TASK_LIMITS}),
            "runtime": {
                "enum": ["", *AgentRuntime.values],
                "description": "the OCI runtime the task's agents run under: runsc (gVisor) or "
                "runc; empty: Podium's default (runsc where the node's engine offers it, runc "
                "for GPU tasks)",
            },
            "search": _object({"image": {"type": "boolean"}, "web": {"type": "boolean"}}),
            "judge": _judge(),
            "primary_metric": _text(minLength=1, maxLength=_column_length(Task, "primary_metric")),
            "entry_rule": {"enum": Task.EntryRule.values},
            "tie_rule": {"enum": Task.TieRule.values},
            "ranked_by": {"enum": Task.RankedBy.values},
            "multiple_comparisons": {
                "enum": Task.MultipleComparisons.values,
                "description": "how the paired tests drawing a board's groups are corrected "
                "for being made together: holm (the default), bonferroni or none",
            },
            "final_repeats": _count(Task, "final_repeats", 1)
            | {
                "description": "k: runs of each final entry an organiser's \"repeat the final "
                'entries" makes on a split (its own and k - 1 more); 1: never repeated'
            },
            "timeout_policy": {"enum": Task.TimeoutPolicy.values},
            "error_policy": {"enum": Task.ErrorPolicy.values},
            "quotas": _object(
                {
                    "per_day": _count(Task, "quota_per_day", 0, nullable=True),
                    "total": _count(Task, "quota_total", 0, nullable=True),
                    "concurrent": _count(Task, "quota_concurrent", 0, nullable=True),
                    "back_on_cancel": {"type": "boolean"},
                }
            ),
            "splits_selectable": {"type": "boolean"},
            "splits": {"type": "array", "items": split},
        },
        ("id", "name", "protocol"),
    )
    task["allOf"] = by_benchmark
    return task


def _by_task(description: str) -> dict[str, Any]:
    """A mapping from counted tasks' ids to a name (a metric, a setting)."""
    return {
        "type": "object",
        "description": description,
        "propertyNames": {"pattern": SLUG},
        "additionalProperties": _text(minLength=1, maxLength=100),
    }


def _overall() -> dict[str, Any]:
    return _object(
        {
            "title": _text(
                f"the board's title (default: {DEFAULT_TITLE})", minLength=1, maxLength=200
            ),
            "method": {
                "enum": list(METHODS),
                "description": "average-rank: the mean of a team's ranks on the counted tasks' "
                "boards (lower first); mean: the mean of its entries' chosen metrics",
            },
            "tasks": {
                "type": "array",
                "description": "the ids of the tasks that count (default: every task)",
                "items": _text(pattern=SLUG),
                "minItems": 1,
                "uniqueItems": True,
            },
            "metrics": _by_task(
                "mean only: per task, the declared metric its entries count with (default: "
                "the task's primary metric)"
            ),
            "settings": _by_task(
                "per task whose benchmark has settings, the setting whose board counts "
                "(default: its first)"
            ),
        },
        ("method",),
    )


def _public_board() -> dict[str, Any]:
    """What the public-test boards show while a phase runs (``leaderboard.public_board``)."""
    return _object(
        {
            "freeze_days": {
                **_count(Challenge, "freeze_days", nullable=True),
                "description": "the public-test boards freeze for the last N days of each "
                "phase: they rank submissions made before, and teams see no public-test score "
                "of one made since until the phase ends (default: never frozen)",
            },
            "ladder_threshold": {
                "type": ["number", "null"],
                "exclusiveMinimum": 0,
                "description": "the Ladder (Blum and Hardt, 2015): a team's public-test score "
                "is published only when it beats its best published score by more than this, "
                "in the primary metric's units, rounded to it (default: every score published)",
            },
        }
    )


def bundle_schema() -> dict[str, Any]:
    """The schema of ``challenge.yaml``."""
    challenge = _object(
        {
            "slug": _text("the challenge's address: /c/<slug>/", pattern=SLUG, maxLength=100),
            "title": _text(minLength=1, maxLength=200),
            "description": _text(),
            "status": {"enum": ["draft", "published"]},
            "package_index": _text(
                "a PyPI mirror teams' builds may install from: one http(s) URL, no credentials",
                maxLength=500,
            ),
            "kit_includes_corpus": {"type": "boolean"},
            "registration_approval": {
                "type": "boolean",
                "description": "a team submits once an organiser approved its registration "
                "(the Participants page); default false: every team may submit",
            },
            "pages": _object({page: _file("a Markdown page") for page in PAGES}),
            "corpus": _file("the search corpus directory, or a tar of it"),
            "logo": _file("the challenge's logo: a PNG, JPEG or WebP image"),
            "kit_files": {
                "type": "array",
                "description": "files and directories of the bundle the starter kit carries "
                "under files/, at their path in the bundle",
                "items": _file("a file or a directory"),
                "uniqueItems": True,
            },
        },
        ("slug", "title"),
    )
    phase = _object(
        {
            "name": _text(minLength=1, maxLength=100),
            "starts_at": _moment(),
            "ends_at": _moment(),
            "quotas": _object(
                {
                    "per_day": _count(Phase, "quota_per_day", 0, nullable=True),
                    "total": _count(Phase, "quota_total", 0, nullable=True),
                }
            ),
        },
        ("name", "starts_at", "ends_at"),
    )
    baseline = _object(
        {
            "method_name": _text("its name on the leaderboard", minLength=1, maxLength=200),
            "description": _text(),
            "context": _file("the baseline agent's build context: a directory with a Dockerfile"),
            "tasks": {
                "type": "array",
                "description": "the ids of the tasks it runs on",
                "items": _text(pattern=SLUG),
                "minItems": 1,
                "uniqueItems": True,
            },
        },
        ("method_name", "context", "tasks"),
    )
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "Podium challenge bundle (challenge.yaml)",
        **_object(
            {
                "bundle_version": {"const": BUNDLE_VERSION},
                "challenge": challenge,
                "phases": {"type": "array", "items": phase},
                "tasks": {"type": "array", "items": _task()},
                "baselines": {"type": "array", "items": baseline},
                "overall": _overall(),
                "public_board": _public_board(),
            },
            ("bundle_version", "challenge"),
        ),
    }


def schema_text() -> str:
    return json.dumps(bundle_schema(), indent=2, sort_keys=True) + "\n"
