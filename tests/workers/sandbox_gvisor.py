"""The sandbox checks' view under gVisor (runsc), where runc's does not apply: gVisor's kernel
answers the probes, so what the host sees of the sandbox (its cgroups, Docker's own list of its
mounts) stands in for what runc's containers show inside (``sandbox_checks``)."""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import TYPE_CHECKING

from workers.hardening import pids_limit_for
from workers.sandbox import LABEL_RUN

if TYPE_CHECKING:
    from tests.workers.sandbox_checks import Subject

CGROUP_ROOT = "/sys/fs/cgroup"
# What gVisor mounts in every container, by type: its own pseudo filesystems, and through its
# file proxy (9p, no host path shown) the image's root, Docker's files and volumes
# (``only_its_own_mounts`` then reads Docker's own list of the container's mounts).
GVISOR_OWN = {
    "/": "9p",
    "/proc": "proc",
    "/sys": "sysfs",
    "/dev": "tmpfs",
    "/dev/pts": "devpts",
    "/dev/shm": "tmpfs",
}
GVISOR_PROXIED = "9p"


class SandboxEnded(RuntimeError):
    """The container ended while a probe ran (gVisor's sandbox meeting its host limits)."""

    def __init__(self, state: dict) -> None:
        super().__init__(f"the container ended: {state}")
        self.state = state


def host_cgroup(container_id: str, controller: str, name: str) -> str | None:
    """The container's cgroup file ``name`` as the host sees it (v1: under ``controller``; v2:
    the unified tree), or None: gVisor shows the agent none of them, the host's still hold."""
    for pattern in (
        f"{controller}/**/{container_id}/{name}",
        f"{controller}/**/docker-{container_id}.scope/{name}",
        f"**/{container_id}/{name}",
        f"**/docker-{container_id}.scope/{name}",
    ):
        for path in Path(CGROUP_ROOT).glob(pattern):
            return path.read_text().strip()
    return None


def memory_seen(s: Subject) -> dict:
    """The sandbox's memory limit and its swap, from the host's cgroup (none is visible
    inside), read before going past it: the whole sandbox (gVisor's kernel with the agent's
    memory in it) then meets the limit, and the host's OOM killer ends it."""
    seen = {
        "limit": host_cgroup(s.container.id, "memory", "memory.limit_in_bytes")
        or host_cgroup(s.container.id, "memory", "memory.max"),
        "with_swap": host_cgroup(s.container.id, "memory", "memory.memsw.limit_in_bytes")
        or host_cgroup(s.container.id, "memory", "memory.swap.max"),
    }
    with contextlib.suppress(SandboxEnded):
        s.probe("memory", bytes=s.configuration.memory_bytes + 64 * 1024 * 1024)
    s.container.reload()
    assert s.container.attrs["State"]["OOMKilled"], s.container.attrs["State"]
    return seen


def pids_held(s: Subject) -> None:
    """The engine's limit bounds the sandbox's host threads (``workers.hardening``'s allowance
    for gVisor's own); a fork loop meets it as the sandbox's end, or as EAGAIN."""
    expected = pids_limit_for(s.configuration.pids_limit, "runsc")
    assert host_cgroup(s.container.id, "pids", "pids.max") == str(expected)
    try:
        seen = s.probe("pids", at_most=4 * expected)
    except SandboxEnded:
        seen = {"error": None, "forked": 0}
    s.container.reload()
    ended = s.container.status != "running"
    assert ended or (seen["error"] == "EAGAIN" and seen["forked"] < expected), seen


def cpu_seen(s: Subject) -> dict:
    """gVisor shows no cgroup file and reports CPU time of its own: the host's cgroup says the
    quota, and how much CPU the sandbox used while the probe's processes spun."""
    used_before = host_cpu_s(s.container.id)
    started = time.monotonic()
    seen = s.probe("cpu", processes=2, seconds=1.0)
    seen["wall_s"] = time.monotonic() - started
    seen["cpu_s"] = host_cpu_s(s.container.id) - used_before
    seen["v1"] = [host_cgroup(s.container.id, "cpu", f"cpu.cfs_{n}_us") for n in QUOTA]
    seen["v2"] = host_cgroup(s.container.id, "cpu", "cpu.max")
    return seen


QUOTA = ("quota", "period")


def host_cpu_s(container_id: str) -> float:
    """The CPU time the container's processes used, from the host's cgroup (v1 or v2)."""
    usage_ns = host_cgroup(container_id, "cpuacct", "cpuacct.usage")
    if usage_ns is not None:
        return int(usage_ns) / 1e9
    stat = host_cgroup(container_id, "cpu", "cpu.stat") or ""
    fields = dict(line.split() for line in stat.splitlines())
    return int(fields["usage_usec"]) / 1e6


def only_its_own_mounts(s: Subject, docker_files: tuple[str, ...]) -> None:
    """gVisor shows what comes from the host as 9p, with no host path: each mount it shows is
    declared (as declared, or proxied), gVisor's own, or Docker's files; and Docker's own list
    of the container's mounts (on the host) holds the declared ones alone, from this
    container's volumes of the declared kind or the host folders made for it."""
    declared = s.configuration.mounts
    for mount in s.filesystem()["mounts"]:
        target, kind, root = mount["target"], mount["type"], mount["root"]
        assert root == "/", mount
        if target in declared:
            assert kind in (declared[target], GVISOR_PROXIED), mount
        elif target in GVISOR_OWN:
            assert kind == GVISOR_OWN[target], mount
        else:
            assert target in docker_files and kind == GVISOR_PROXIED, f"not its own: {mount}"
    s.container.reload()
    for mount in s.container.attrs["Mounts"]:
        target = mount["Destination"]
        assert target in declared, f"not declared: {mount}"
        if mount["Type"] == "bind":
            assert declared[target] == "bind" and s.bound.get(target) == mount["Source"], mount
        else:
            assert mount["Type"] == "volume", mount
            volume = s.container.client.volumes.get(mount["Name"])
            labels = volume.attrs.get("Labels") or {}
            assert (volume.attrs.get("Options") or {}).get("type") == declared[target], volume
            assert labels.get(LABEL_RUN) == s.container.labels.get(LABEL_RUN), (mount, labels)
