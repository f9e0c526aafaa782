"""A task's agent runtime (issue #38): chosen per task in the admin and the bundle, refused for
GPU tasks while they keep runc, and shown on the run's page."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from leaderboard.models import EvaluationRun, Task
from tests.leaderboard.bundle_support import edit, problems, write_bundle


def test_a_gpu_task_under_runsc_is_refused_until_the_operator_moves_gpu_tasks(task, settings):
    settings.PODIUM_GPU_CLASSES, settings.PODIUM_GPU_RUNTIME = ["l40s", "cpu"], "runc"
    task.agent_runtime = "runsc"
    with pytest.raises(ValidationError, match="run under runc on this install") as refused:
        task.full_clean()
    assert set(refused.value.message_dict) == {"agent_runtime"}
    task.gpu_class = "cpu"
    task.full_clean()  # a CPU task may run under runsc
    task.gpu_class, settings.PODIUM_GPU_RUNTIME = "l40s", "runsc"  # a gVisor with nvproxy
    task.full_clean()
    task.agent_runtime = "kata"
    with pytest.raises(ValidationError, match="kata"):
        task.full_clean()


def test_a_bundle_names_the_runtime_and_an_unknown_one_is_named_at_its_line(tmp_path, db):
    root = write_bundle(tmp_path / "b")
    edit(root, "    judge: {kind: rules}\n", "    judge: {kind: rules}\n    runtime: kata\n")
    (found,) = problems(root)
    assert "runtime" in found and "kata" in found and "challenge.yaml:" in found


def test_the_run_page_says_which_runtime_ran_the_agent(client, pipeline_run, make_user, teams):
    run = pipeline_run(EvaluationRun.State.RUNNING)
    client.force_login(make_user("alice", team=teams["alpha"]))
    page = client.get(reverse("leaderboard:run", args=[run.pk])).content.decode()
    assert 'id="run-runtime"' not in page  # not started: nothing to say
    EvaluationRun.objects.filter(pk=run.pk).update(runtime="runsc")
    page = client.get(reverse("leaderboard:run", args=[run.pk])).content.decode()
    assert "The agent ran under <code>runsc</code> (gVisor" in page
    assert Task.objects.get().agent_runtime == ""  # Podium's default
