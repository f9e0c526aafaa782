"""A declared model is mounted read-only into the agent's Hugging Face cache and resolves by
its hub id; a model the submission did not declare is not there."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from evaluator.benchmarks.crag_mm.agent import TurnPlan
from tests.workers.conftest import TEST_LIMITS, TEST_POLICY, IdentityTruncator, make_split
from workers.model_store import register, stored
from workers.runner import run_agent

pytestmark = pytest.mark.docker


def test_a_declared_model_is_mounted_read_only_and_resolves_by_hub_id(
    agent_image, tmp_path: Path, recorder, no_leftovers
) -> None:
    store = tmp_path / "store"
    for hub_id, hidden in (("podium-test/tiny", 8), ("podium-test/undeclared", 4)):
        files = tmp_path / hub_id.split("/")[1]
        files.mkdir()
        (files / "config.json").write_text(json.dumps({"hidden_size": hidden}))
        register(store, hub_id, files)
    split = make_split(tmp_path / "split", [1], {"c0-t0": "podium-test/tiny"})
    task = "single-source-augmentation"
    report = run_agent(
        agent_image("agents/hub_model"),
        TurnPlan(split, task, IdentityTruncator().truncate),
        task,
        TEST_LIMITS,
        recorder,
        policy=dataclasses.replace(TEST_POLICY, models=(stored(store, "podium-test/tiny"),)),
    )
    assert report.status == "completed", report.failure_reason
    seen = json.loads(recorder.results[0].response)
    assert seen["hidden_size"] == 8
    assert seen["hub"] == ["models--podium-test--tiny"]  # the undeclared one is not there
    assert len(seen["model_mount"]) == 1 and seen["model_mount"][0].startswith("ro,")
    assert seen["write_cache"] == "written"  # locks and the like: a small tmpfs
    assert seen["env"] == {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
