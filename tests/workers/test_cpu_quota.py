"""CPU quotas for Podium's own processes: cgroup v2 and v1 layouts, and none to be had."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from workers import cpu_quota
from workers.cpu_quota import CGROUP_ROOT, CpuQuota


@pytest.fixture(autouse=True)
def warn_again(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cpu_quota, "_warned", [])


def _v2_root(tmp_path: Path) -> Path:
    (tmp_path / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
    (tmp_path / "cgroup.subtree_control").write_text("memory\n")
    return tmp_path


def test_v2_writes_cpu_max_enables_the_controller_and_moves_the_process(tmp_path: Path) -> None:
    root = _v2_root(tmp_path)
    quota = CpuQuota.apply(4321, 1.5, root)
    assert quota is not None and quota.directory == root / "podium-4321"
    assert (quota.directory / "cpu.max").read_text() == "150000 100000"
    assert (quota.directory / "cgroup.procs").read_text() == "4321"
    assert (root / "cgroup.subtree_control").read_text() == "+cpu"


def test_v1_writes_the_cfs_quota(tmp_path: Path) -> None:
    (tmp_path / "cpu").mkdir()
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text("-1")
    quota = CpuQuota.apply(99, 0.25, tmp_path)
    assert quota is not None
    assert (quota.directory / "cpu.cfs_quota_us").read_text() == "25000"
    assert (quota.directory / "cpu.cfs_period_us").read_text() == "100000"


def test_without_cgroups_it_says_so_once_and_runs_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, "workers.cpu_quota"):
        assert CpuQuota.apply(1, 1.0, tmp_path) is None
        assert CpuQuota.apply(2, 1.0, tmp_path) is None
    assert [r.getMessage() for r in caplog.records] == [
        f"no CPU quota for Podium's own processes (no cgroup CPU controller under {tmp_path}): "
        "niceness only"
    ]
    with pytest.raises(ValueError, match="above 0 CPUs"):
        CpuQuota.apply(1, 0, tmp_path)


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_a_real_quota_holds_a_busy_process_to_its_share() -> None:
    """On this machine's cgroups: two busy threads held to a quarter of a CPU. Where none can
    be written (the documented fallback), the quota is None and nothing else changes."""
    spin = "import threading\ndef f():\n    while True: pass\n" + (
        "[threading.Thread(target=f).start() for _ in range(2)]\n"
    )
    busy = subprocess.Popen([sys.executable, "-c", spin])
    try:
        quota = CpuQuota.apply(busy.pid, 0.25)
        if quota is None:
            assert not os.access(CGROUP_ROOT, os.W_OK) or os.geteuid() != 0
            return
        time.sleep(0.5)
        before, started = _cpu_seconds(busy.pid), time.monotonic()
        time.sleep(2.0)
        share = (_cpu_seconds(busy.pid) - before) / (time.monotonic() - started)
        assert share < 0.4, f"{share:.2f} CPUs used under a 0.25 quota"
    finally:
        busy.kill()
        busy.wait()
    quota.remove()
    assert not quota.directory.exists()
