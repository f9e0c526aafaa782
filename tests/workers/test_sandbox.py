"""The sandbox policy: the create arguments, and what an agent actually sees inside."""

from __future__ import annotations

import json

import pytest

from agentkit.protocol import IMAGE_DIR, SOCKET_DIR
from evaluator.benchmarks.crag_mm.agent import TurnPlan
from tests.workers.conftest import TEST_LIMITS, TEST_POLICY, IdentityTruncator, make_split
from workers.runner import run_agent
from workers.sandbox import AGENT_UID, SandboxPolicy


def test_defaults_turn_every_protection_on():
    kwargs = SandboxPolicy().container_kwargs("sha256:x", "multi-turn-qa", "vol", "img", "run1")
    assert kwargs["network_mode"] == "none"
    assert kwargs["read_only"] is True
    assert kwargs["user"] == "10001:10001"
    assert kwargs["cap_drop"] == ["ALL"]
    assert kwargs["security_opt"] == ["no-new-privileges"]
    assert kwargs["privileged"] is False
    assert kwargs["memswap_limit"] == kwargs["mem_limit"]
    assert kwargs["pids_limit"] > 0 and kwargs["nano_cpus"] > 0
    mounts = {m["Target"]: (m["Source"], m["ReadOnly"]) for m in kwargs["mounts"]}
    assert mounts == {SOCKET_DIR: ("vol", False), IMAGE_DIR: ("img", True)}
    assert "volumes" not in kwargs, "nothing but the socket and image volumes is mounted"
    assert set(kwargs["tmpfs"]) == {"/tmp", "/podium/hf"}  # scratch; the model cache's locks
    assert all("size=" in options for options in kwargs["tmpfs"].values())
    assert kwargs["log_config"]["Type"] == "json-file"
    assert kwargs["log_config"]["Config"] == {"max-size": str(1024 * 1024), "max-file": "1"}
    assert kwargs["environment"]["PODIUM_TASK"] == "multi-turn-qa"
    assert kwargs["device_requests"] == []
    assert kwargs["environment"]["NVIDIA_VISIBLE_DEVICES"] == "void", "no GPU unless granted"
    assert {u["Name"] for u in kwargs["ulimits"]} == {"nofile", "core"}


def test_the_cpu_quota_is_at_most_the_cpus_the_node_may_use(monkeypatch):
    """Docker refuses a quota above the CPUs its own affinity allows: a node pinned to one CPU
    (taskset, a cpuset) gets one CPU per agent, not the machine's count."""
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: {3})
    kwargs = SandboxPolicy(cpus=4).container_kwargs("i", "multi-turn-qa", "v", "w", "r")
    assert kwargs["nano_cpus"] == 1_000_000_000


def test_gpu_requests_and_the_visible_devices_match():
    (every,) = SandboxPolicy(gpus="all").device_requests()
    assert every["Count"] == -1 and every["Capabilities"] == [["gpu"]]
    (some,) = SandboxPolicy(gpus="0, 2").device_requests()
    assert some["DeviceIDs"] == ["0", "2"]
    for gpus, visible in ((None, "void"), ("", "void"), ("all", "all"), ("0, 2", "0,2")):
        kwargs = SandboxPolicy(gpus=gpus).container_kwargs("i", "multi-turn-qa", "v", "w", "r")
        assert kwargs["environment"]["NVIDIA_VISIBLE_DEVICES"] == visible, gpus
    with pytest.raises(ValueError, match="gpus"):
        SandboxPolicy(gpus=",").device_requests()


def test_declared_models_are_bound_read_only_into_an_offline_cache(tmp_path):
    folder = tmp_path / "hub" / "models--org--tiny"
    kwargs = SandboxPolicy(models=(folder,)).container_kwargs("i", "multi-turn-qa", "v", "w", "r")
    (bound,) = [m for m in kwargs["mounts"] if m["Type"] == "bind"]
    assert bound["Target"] == "/podium/hf/hub/models--org--tiny"
    assert bound["Source"] == str(folder) and bound["ReadOnly"] is True
    assert kwargs["environment"]["HF_HOME"] == "/podium/hf"
    assert kwargs["environment"]["HF_HUB_OFFLINE"] == kwargs["environment"]["TRANSFORMERS_OFFLINE"]
    assert "/podium/hf" in kwargs["tmpfs"] and "noexec" in kwargs["tmpfs"]["/podium/hf"]
    none = SandboxPolicy().container_kwargs("i", "multi-turn-qa", "v", "w", "r")
    assert not [m for m in none["mounts"] if m["Type"] == "bind"]
    assert none["environment"]["HF_HUB_OFFLINE"] == "1"  # offline whether or not models come


@pytest.mark.parametrize("field", ["memory_bytes", "pids_limit", "nofile", "cpus", "shm_bytes"])
def test_nonsense_sizes_are_refused(field):
    with pytest.raises(ValueError, match=field):
        SandboxPolicy(**{field: 0})


def test_a_runner_with_the_agents_uid_is_refused_an_image_directory(monkeypatch):
    """Staged images are hidden from the agent by owner: the runner must be another uid."""
    monkeypatch.setattr("os.geteuid", lambda: AGENT_UID)
    with pytest.raises(RuntimeError, match=f"uid {AGENT_UID}, the agent's"):
        SandboxPolicy().create_image_volume(None, "run", "image", 1024 * 1024)


@pytest.mark.docker
def test_agent_inside_sees_only_what_the_policy_allows(
    agent_image, tmp_path, recorder, no_leftovers
):
    split = make_split(tmp_path / "split", [1])
    task = "single-source-augmentation"
    report = run_agent(
        agent_image("hostile/escape"),
        TurnPlan(split, task, IdentityTruncator().truncate),
        task,
        TEST_LIMITS,
        recorder,
        policy=TEST_POLICY,
    )
    assert report.status == "completed", report.failure_reason
    seen = json.loads(recorder.results[0].response)
    # read-only root filesystem; no privilege gain
    assert all(r == "failed: EROFS" for r in seen["writes"].values()), seen["writes"]
    assert seen["setuid_root"] == "failed: EPERM"
    assert seen["chmod_root"].startswith("failed:")
    assert seen["mount"] == "failed: EPERM"
    assert seen["uid"] == 10001 and seen["status"]["Uid"].split()[0] == "10001"
    assert int(seen["status"]["CapEff"], 16) == 0 and int(seen["status"]["CapBnd"], 16) == 0
    assert seen["status"]["NoNewPrivs"] == "1"
    # scratch and the socket directory are size-capped tmpfs
    assert seen["scratch_bytes_written"] <= TEST_POLICY.scratch_bytes
    assert seen["socket_dir_bytes_written"] <= TEST_POLICY.socket_dir_bytes
    mounts = {line.split()[1]: line.split() for line in seen["mounts"]}
    assert mounts["/tmp"][2] == "tmpfs" and mounts[SOCKET_DIR][2] == "tmpfs"
    shm = mounts["/dev/shm"][3].split(",")
    assert mounts["/dev/shm"][2] == "tmpfs" and {"nosuid", "nodev", "noexec"} <= set(shm)
    assert f"size={TEST_POLICY.shm_bytes // 1024}k" in shm
    # the image directory: read-only tmpfs holding this turn's image only
    assert mounts[IMAGE_DIR][2] == "tmpfs" and mounts[IMAGE_DIR][3].startswith("ro,")
    for tampering in ("write", "write_beside", "remove", "chmod", "chmod_directory"):
        assert seen["image_dir"][tampering] == "failed: EROFS", tampering
    assert len(seen["image_dir"]["files"]) == 1 and seen["image_dir"]["files"][0].endswith(".jpg")
    assert seen["environment"]["NVIDIA_VISIBLE_DEVICES"] == "void"
    assert mounts["/"][3].startswith("ro")
    # limits
    assert int(seen["memory_limit"]) == TEST_POLICY.memory_bytes
    assert int(seen["memsw_limit"]) == TEST_POLICY.memory_bytes, "swap must be disabled"
    assert int(seen["pids_max"]) == TEST_POLICY.pids_limit
    quota, period = (int(v) for v in seen["cpu_quota"])
    assert quota / period == pytest.approx(TEST_POLICY.cpus)
    assert seen["nofile"] == [TEST_POLICY.nofile, TEST_POLICY.nofile]
    assert seen["core"] == [0, 0]
    assert seen["docker_socket"] is False
