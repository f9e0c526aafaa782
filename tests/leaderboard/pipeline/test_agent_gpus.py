"""Agent containers get exactly the GPUs of the worker that runs them (PODIUM_AGENT_GPUS)."""

from __future__ import annotations

from leaderboard.models import Submission
from leaderboard.pipeline.run import agent_policy


def test_an_agent_gets_this_workers_gpus_and_none_on_a_cpu_worker(settings):
    settings.PODIUM_AGENT_GPUS = "GPU-1c2b9f0e"
    policy = agent_policy(Submission(declared_models=[]))
    assert policy.visible_devices() == "GPU-1c2b9f0e"
    assert policy.device_requests()[0]["DeviceIDs"] == ["GPU-1c2b9f0e"]
    settings.PODIUM_AGENT_GPUS = "all"
    assert agent_policy(Submission(declared_models=[])).visible_devices() == "all"
    settings.PODIUM_AGENT_GPUS = ""
    policy = agent_policy(Submission(declared_models=[]))
    assert (policy.device_requests(), policy.visible_devices()) == ([], "void")
