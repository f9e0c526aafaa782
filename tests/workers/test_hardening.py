"""The hardening written once (``workers.hardening``) and taken by every container of a team's
image; ``test_sandbox_conformance.py`` checks in real containers that it holds."""

from __future__ import annotations

import dataclasses

import pytest

from workers.build_notices import check_container
from workers.hardening import (
    RUNSC_OWN_THREADS,
    RUNSC_THREADS_PER_TASK,
    hardened,
    pids_limit_for,
)
from workers.package_index import gate_container
from workers.sandbox import SandboxPolicy

SIZES = ("pids_limit", "mem_limit", "memswap_limit", "log_config")


def test_the_hardening_turns_every_protection_on():
    kwargs = hardened(memory_bytes=64 * 1024 * 1024, pids_limit=16)
    assert kwargs["network_mode"] == "none" and kwargs["user"] == "10001:10001"
    assert kwargs["read_only"] is True and kwargs["privileged"] is False
    assert kwargs["cap_drop"] == ["ALL"] and kwargs["security_opt"] == ["no-new-privileges"]
    assert kwargs["ipc_mode"] == "private"
    assert kwargs["mem_limit"] == kwargs["memswap_limit"] == 64 * 1024 * 1024, "no swap"
    assert kwargs["pids_limit"] == 16
    assert kwargs["log_config"]["Config"] == {"max-size": str(64 * 1024), "max-file": "1"}


@pytest.mark.parametrize("sizes", [(0, 1, 1), (1, 0, 1), (1, 1, 0), (-1, 1, 1)])
def test_nonsense_sizes_are_refused(sizes):
    memory, pids, log = sizes
    with pytest.raises(ValueError, match="positive"):
        hardened(memory_bytes=memory, pids_limit=pids, log_max_bytes=log)


def test_every_container_of_a_teams_image_takes_the_hardening(tmp_path):
    protections = hardened(memory_bytes=1, pids_limit=1)
    containers = {
        "agent sandbox": SandboxPolicy().container_kwargs("i", "multi-turn-qa", "v", "w", "r"),
        "notice check": check_container("sha256:built"),
        "package-index gate": gate_container("podium/agent-base:py3.11", tmp_path),
    }
    for name, kwargs in containers.items():
        for key, value in protections.items():
            if key not in SIZES:
                assert kwargs[key] == value, (name, key)
        assert kwargs["memswap_limit"] == kwargs["mem_limit"] > 0, name
        assert kwargs["pids_limit"] > 0 and kwargs["log_config"]["Type"] == "json-file", name


def test_under_runsc_the_pids_limit_allows_for_the_sandboxs_own_threads():
    """gVisor's kernel, file proxy and ptrace stubs are host threads the engine's limit counts."""
    assert pids_limit_for(64, None) == pids_limit_for(64, "runc") == 64
    assert pids_limit_for(64, "runsc") == RUNSC_OWN_THREADS + RUNSC_THREADS_PER_TASK * 64
    assert hardened(memory_bytes=1, pids_limit=64, runtime="runsc")["pids_limit"] > 8 * 64
    policy = SandboxPolicy(pids_limit=100)
    assert policy.container_kwargs("i", "multi-turn-qa", "v", "w", "r")["pids_limit"] == 100
    runsc = dataclasses.replace(policy, runtime="runsc")
    assert runsc.container_kwargs("i", "multi-turn-qa", "v", "w", "r")["pids_limit"] == (
        pids_limit_for(100, "runsc")
    )
