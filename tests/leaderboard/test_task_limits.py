"""A task's limits are listed once (``leaderboard.models.challenge``): the runner's limits, the
bundle's ``limits:`` keys, the admin's fieldset, the API's fields and the starter kit's run
commands all come from that list (the runner's options from ``workers.limits.OPTIONS``), and
what a user sees of them stays as it was."""

from __future__ import annotations

import dataclasses
import shlex

import pytest
from django.contrib import admin

from leaderboard.api.serializers import TaskSerializer
from leaderboard.challenge_bundle.schema import TASK_FIELDS, bundle_schema
from leaderboard.kits.commands import task_commands
from leaderboard.models import Task
from leaderboard.models.challenge import RUN_LIMITS, RUN_POLICIES, TASK_LIMITS
from leaderboard.pipeline.run import limits_for
from workers.cli import _limits, build_parser
from workers.limits import OPTIONS, Limits


def test_each_limit_is_a_task_field_and_each_run_limit_the_runners():
    task_fields = {field.name for field in Task._meta.get_fields()}
    assert set(TASK_LIMITS) | set(RUN_POLICIES) <= task_fields
    assert set(RUN_LIMITS) | set(RUN_POLICIES) <= {f.name for f in dataclasses.fields(Limits)}


def test_a_runs_limits_are_its_tasks():
    task = Task(
        readiness_s=7, per_item_s=2.5, max_batch_size=3, total_wall_s=900,
        timeout_policy=Task.TimeoutPolicy.FAIL_RUN, error_policy=Task.ErrorPolicy.CONTINUE,
    )  # fmt: skip
    limits = limits_for(task)
    assert {name: getattr(limits, name) for name in RUN_LIMITS} == {
        "readiness_s": 7, "per_item_s": 2.5, "max_batch_size": 3, "total_wall_s": 900,
    }  # fmt: skip
    assert (limits.timeout_policy, limits.error_policy) == ("fail", "continue")


def test_the_bundles_limits_keys_are_the_list_in_its_order():
    task = bundle_schema()["properties"]["tasks"]["items"]["properties"]
    keys = ["readiness_s", "per_item_s", "max_batch_size", "total_wall_s", "max_artifact_bytes"]
    assert list(task["limits"]["properties"]) == list(TASK_LIMITS) == [*keys, "gpu_class"]
    places = [place for place, _ in TASK_FIELDS if place[0] == "limits"]
    assert places == [("limits", name) for name in TASK_LIMITS]


def test_the_admin_and_the_api_show_the_limits_as_before():
    fieldsets = dict(admin.site._registry[Task].fieldsets)
    assert fieldsets["Limits"]["fields"] == (
        "readiness_s", "per_item_s", "max_batch_size", "total_wall_s", "timeout_policy",
        "error_policy", "image_search_enabled", "web_search_enabled", "gpu_class",
        "agent_runtime",
    )  # fmt: skip
    assert TaskSerializer.Meta.fields == (
        "id", "challenge", "task_id", "name", "description", "protocol", "readiness_s",
        "per_item_s", "max_batch_size", "total_wall_s", "timeout_policy", "error_policy",
        "image_search_enabled", "web_search_enabled", "judge", "settings", "primary_metric",
        "entry_rule", "final_repeats", "quota_per_day", "quota_total", "quota_concurrent",
        "max_artifact_bytes", "splits_selectable",
    )  # fmt: skip


@pytest.mark.parametrize(
    ("total", "timeout_policy", "error_policy"),
    [(900, Task.TimeoutPolicy.FAIL_RUN, Task.ErrorPolicy.CONTINUE), (None, "missing", "abort")],
)
def test_the_kits_run_command_gives_the_runner_its_tasks_limits(
    total, timeout_policy, error_policy
):
    task = Task(
        task_id="multi-turn-qa", benchmark="crag-mm", readiness_s=7, per_item_s=2.5,
        max_batch_size=3, total_wall_s=total, timeout_policy=timeout_policy,
        error_policy=error_policy,
    )  # fmt: skip
    command = shlex.split(task_commands(task, [], corpus=False).run.replace("\\\n", " "))
    assert command[:3] == ["python", "-m", "workers.cli"]
    args = build_parser().parse_args(command[3:])
    assert _limits(args) == limits_for(task)
    assert ("--total-s" in command) == (total is not None)


def test_the_runner_takes_each_option_and_an_error_names_it(capsys):
    required = ["--image", "x", "--split", "s", "--task", "t", "--out", "o", "--report", "r"]
    assert _limits(build_parser().parse_args(required)) == Limits()
    assert Limits().error_policy == "abort"  # the server's default and the official evaluation
    values = {"per_item_s": "2.5", "readiness_s": "7", "max_batch_size": "3", "total_wall_s": "60",
              "timeout_policy": "fail", "error_policy": "continue", "max_restarts": "0",
              "max_consecutive_timeouts": "5"}  # fmt: skip
    assert set(values) == set(OPTIONS)
    argv = [*required, *(x for name, v in values.items() for x in (OPTIONS[name][0], v))]
    limits = _limits(build_parser().parse_args(argv))
    assert (limits.per_item_s, limits.max_batch_size, limits.total_wall_s) == (2.5, 3, 60)
    assert (limits.error_policy, limits.max_restarts, limits.max_consecutive_timeouts) == (
        "continue", 0, 5,
    )  # fmt: skip
    with pytest.raises(ValueError, match=r"^--per-turn-s must be positive, got 0\.0$"):
        _limits(build_parser().parse_args([*required, "--per-turn-s", "0"]))
    with pytest.raises(SystemExit):
        build_parser().parse_args([*required, "--max-restarts", "two"])
    assert "--max-restarts: 'two' is not a whole number" in capsys.readouterr().err
