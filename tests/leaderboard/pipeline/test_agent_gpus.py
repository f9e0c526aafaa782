"""Agent containers get exactly the GPUs of the worker that runs them (PODIUM_AGENT_GPUS), and
the task's runtime: the one it names, else with GPUs PODIUM_GPU_RUNTIME, else Podium's default."""

from __future__ import annotations

from leaderboard.models import Submission, Task
from leaderboard.pipeline.run import agent_policy


def test_an_agent_gets_this_workers_gpus_and_none_on_a_cpu_worker(settings):
    settings.PODIUM_AGENT_GPUS = "GPU-1c2b9f0e"
    policy = agent_policy(Submission(declared_models=[]), Task())
    assert policy.visible_devices() == "GPU-1c2b9f0e"
    assert policy.device_requests()[0]["DeviceIDs"] == ["GPU-1c2b9f0e"]
    settings.PODIUM_AGENT_GPUS = "all"
    assert agent_policy(Submission(declared_models=[]), Task()).visible_devices() == "all"
    settings.PODIUM_AGENT_GPUS = ""
    policy = agent_policy(Submission(declared_models=[]), Task())
    assert (policy.device_requests(), policy.visible_devices()) == ([], "void")


def test_the_runtime_is_the_tasks_else_the_gpu_runtime_with_gpus_else_the_default(settings):
    submission = Submission(declared_models=[])
    settings.PODIUM_AGENT_GPUS, settings.PODIUM_GPU_RUNTIME = "", "runc"
    assert agent_policy(submission, Task()).runtime is None  # chosen on the engine: runsc there
    assert agent_policy(submission, Task(agent_runtime="runc")).runtime == "runc"
    settings.PODIUM_AGENT_GPUS = "all"
    assert agent_policy(submission, Task()).runtime == "runc"
    settings.PODIUM_GPU_RUNTIME = "runsc"  # an operator's gVisor with its GPU proxy
    assert agent_policy(submission, Task()).runtime == "runsc"
    assert agent_policy(submission, Task(agent_runtime="runc")).runtime == "runc"
