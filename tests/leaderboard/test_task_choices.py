"""A task's setting choices are the evaluator's and the runner's own: nothing copied drifts."""

from __future__ import annotations

from typing import get_args

import pytest
from django.core.exceptions import ValidationError

from evaluator.benchmarks import names
from evaluator.benchmarks.crag_mm import CragMM
from evaluator.benchmarks.crag_mm.grading import MISSING_RULES
from evaluator.benchmarks.crag_mm.metrics import COUNTINGS
from evaluator.judges import JUDGE_NAMES
from leaderboard.models import Task
from leaderboard.pipeline.run import ERROR_POLICIES, TIMEOUT_POLICIES
from workers.limits import ErrorPolicy, TimeoutPolicy


def test_each_task_choice_is_one_the_evaluator_or_runner_knows():
    field = Task._meta.get_field("benchmark")
    assert [name for name, _ in field.choices] == list(names())  # the registry's, read anew
    assert set(Task.JudgeKind.values) == set(JUDGE_NAMES) - {"replay"}  # replay: offline only
    assert set(TIMEOUT_POLICIES) == set(Task.TimeoutPolicy.values)
    assert set(TIMEOUT_POLICIES.values()) == set(get_args(TimeoutPolicy))
    assert set(ERROR_POLICIES) == set(Task.ErrorPolicy.values)
    assert set(ERROR_POLICIES.values()) == set(get_args(ErrorPolicy))


def test_a_benchmark_the_registry_does_not_know_is_refused():
    task = Task(benchmark="crag", primary_metric="accuracy", task_id="t", name="T")
    with pytest.raises(ValidationError, match=r"'crag' is not a valid choice"):
        task.full_clean(exclude=["challenge"])


def test_the_primary_metric_is_one_the_benchmark_declares():
    task = Task(benchmark="crag-mm", primary_metric="accuracy")
    assert task.declared().metric("accuracy").headline
    task.primary_metric = "turns"  # a count ranks nothing
    with pytest.raises(ValidationError, match=r"'turns' \(Turns\) is a count, it cannot rank"):
        task.clean()


def test_task_settings_are_the_benchmarks_own(settings):
    task = Task(benchmark="crag-mm", primary_metric="truthfulness")
    assert task.effective_settings == {"counting": "paper", "missing_variant": "kit-b"}
    choices = CragMM.settings_schema["properties"]
    assert set(choices["counting"]["enum"]) == set(COUNTINGS)  # nothing copied drifts
    assert set(choices["missing_variant"]["enum"]) == set(MISSING_RULES)
    task.settings = {"counting": "kit-a"}
    benchmark = task.scoring()
    assert (benchmark.counting, benchmark.missing_variant) == ("kit-a", "kit-b")
    for bad, message in (
        ({"counting": "kit-z"}, "counting: 'kit-z' is not one of"),
        ({"countng": "paper"}, "Additional properties are not allowed"),
        ([], "settings: .* is not of type 'object'"),
    ):
        task.settings = bad
        with pytest.raises(ValidationError, match=message):
            task.clean()
    visual = Task(benchmark="visual-rag", primary_metric="accuracy")
    visual.settings = {"evaluated": ["gt_clue", "one_in_1"]}
    with pytest.raises(ValidationError, match=r"evaluated\.1: 'one_in_1' does not match"):
        visual.clean()
    visual.settings = {"evaluated": ["gt_clue", "one_in_3"], "gcue_lambda": 0.25}
    assert visual.scoring().evaluated == ("gt_clue", "one_in_3")
