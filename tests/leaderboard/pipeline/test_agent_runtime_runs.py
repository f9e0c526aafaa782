"""A run under the runtime its task names (issue #38), through the real pipeline: a runtime
the node's engine lacks refuses the run as Podium's fault, naming it for the operator, and never
starts it under another; a run that ran says which runtime ran it."""

from __future__ import annotations

import docker
import pytest

from leaderboard.models import Challenge, EvaluationRun, Task
from leaderboard.splits import import_split_dir
from tests.e2e.harness import REPO, make_task, pipeline, submit_agent, team_member, write_split
from workers.runtimes import offered

pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.django_db(transaction=True)]
__all__ = ["pipeline", "team_member"]  # fixtures used by the tests below

State = EvaluationRun.State
COUNTER = REPO / "tests/e2e/agents/counter"


def test_a_missing_runtime_refuses_the_run_and_a_run_says_which_ran(
    pipeline, team_member, tmp_path
):
    client = docker.from_env()
    engine_has_runsc = "runsc" in offered(client)
    client.close()
    team, user = team_member
    challenge = Challenge.objects.create(name="Runtime", slug="runtime", is_published=True)
    named = make_task(challenge, "single-source-augmentation", agent_runtime="runsc")
    default = make_task(challenge, "multi-source-augmentation")
    for task in (named, default):
        import_split_dir(task, "validation", write_split(tmp_path / task.task_id, 2, 1))
    submission = submit_agent(team, user, challenge, COUNTER, "runtime")
    pipeline.start_worker("runtimes")
    runs = {run.task.task_id: run for run in pipeline.wait_finished(submission, timeout_s=240)}
    ran = runs[default.task_id]
    assert ran.state == State.DONE and ran.runtime == ("runsc" if engine_has_runsc else "runc")
    refused = runs[named.task_id]
    if engine_has_runsc:
        assert refused.state == State.DONE and refused.runtime == "runsc"
        return
    assert refused.state == State.FAILED
    assert refused.failure_kind == EvaluationRun.FailureKind.PODIUM and refused.runtime == ""
    assert "the agent runtime 'runsc' is not offered by this node's Docker engine" in (
        refused.operator_detail
    )
    assert not refused.answers.exists()  # nothing started under another runtime
    assert Task.objects.get(pk=named.pk).agent_runtime == "runsc"
