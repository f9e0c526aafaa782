"""Which workers run a node's janitor: those whose queues start containers on its engine."""

from __future__ import annotations

from leaderboard.pipeline.node import runs_containers


def test_build_and_gpu_workers_run_the_janitor_judge_and_default_workers_do_not():
    assert runs_containers(["build"])
    assert runs_containers(["judge", "gpu-h100"])
    assert runs_containers({"build": None, "gpu-l40s": None, "judge": None, "default": None})
    assert not runs_containers(["judge", "default"])
    assert not runs_containers([])
