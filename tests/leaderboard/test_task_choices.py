"""A task's setting choices are the evaluator's and the runner's own: nothing copied drifts."""

from __future__ import annotations

from typing import get_args

import pytest
from django.core.exceptions import ValidationError

from evaluator.judges import JUDGE_NAMES
from evaluator.protocols import PROTOCOLS
from evaluator.protocols.crag_mm.grading import MISSING_RULES
from evaluator.protocols.crag_mm.metrics import COUNTINGS
from leaderboard.models import Task
from workers.limits import TimeoutPolicy
from workers.pipeline.run import TIMEOUT_POLICIES


def test_each_task_choice_is_one_the_evaluator_or_runner_knows():
    # visual-rag is scored by the evaluator (CLI) and not hosted by the server yet (issue #10)
    assert set(Task.Protocol.values) == set(PROTOCOLS) - {"visual-rag"}
    assert set(Task.Counting.values) == set(COUNTINGS)
    assert set(Task.MissingVariant.values) == set(MISSING_RULES)
    assert set(Task.JudgeKind.values) == set(JUDGE_NAMES) - {"replay"}  # replay: offline only
    assert set(TIMEOUT_POLICIES) == set(Task.TimeoutPolicy.values)
    assert set(TIMEOUT_POLICIES.values()) == set(get_args(TimeoutPolicy))


def test_the_primary_metric_is_one_the_protocol_declares():
    task = Task(protocol="crag-mm", primary_metric="accuracy")
    assert task.declared().metric("accuracy").headline
    task.primary_metric = "turns"  # a count ranks nothing
    with pytest.raises(ValidationError, match="'turns' is not a metric of crag-mm"):
        task.clean()
