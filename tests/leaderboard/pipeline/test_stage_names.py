"""Each stage of a run has one name, the state's (``docs/internals.md``, "Run lifecycle and
glossary"): its module ``leaderboard.pipeline.<stage>``, its work ``<stage>_stage`` and its task
``stage_tasks.<stage>_task``, registered under the stage's Celery name."""

from __future__ import annotations

import importlib

import pytest

from leaderboard.models import EvaluationRun
from leaderboard.pipeline import stage_tasks
from leaderboard.tasks import STAGE_TASKS

State = EvaluationRun.State
STAGES = {State.BUILDING: "build", State.RUNNING: "run", State.JUDGING: "judge",
          State.SCORING: "score"}  # fmt: skip


def test_every_active_state_is_a_stage_and_has_a_celery_name():
    assert set(STAGES) == set(EvaluationRun.ACTIVE_STATES) == set(STAGE_TASKS)


@pytest.mark.parametrize("state", list(STAGES))
def test_a_stages_module_work_and_task_carry_its_name(state):
    stage = STAGES[state]
    assert state.value.startswith(stage[:4])  # the state's value names it
    work = getattr(importlib.import_module(f"leaderboard.pipeline.{stage}"), f"{stage}_stage")
    assert callable(work)
    task = getattr(stage_tasks, f"{stage}_task")
    assert task.name == STAGE_TASKS[state]  # the wire name, kept


def test_no_stage_function_keeps_an_old_name():
    for old in ("prepare_run", "answer_run", "judge_run", "aggregate_run"):
        assert not hasattr(stage_tasks, old)
    build = importlib.import_module("leaderboard.pipeline.build")
    assert not hasattr(build, "prepare_run")  # it was defined twice
