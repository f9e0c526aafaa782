"""A CPU quota for one of Podium's own processes (the search process), through a cgroup.

Docker holds an agent to ``--cpus``; the process that answers its searches must be held too, or
an agent could spend the host's CPU through it. ``CpuQuota.apply(pid, cpus)`` makes a cgroup
``podium-<pid>`` with a CFS quota of ``cpus`` CPUs (cgroup v2 ``cpu.max`` or v1
``cpu.cfs_quota_us``) and moves the process (all its threads) into it; ``remove()`` deletes it
once the process is gone. Where no cgroup can be written (not root, a read-only cgroup mount),
``apply`` returns None and says so once in the log: the process then runs on niceness alone.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

log = logging.getLogger(__name__)

CGROUP_ROOT = Path("/sys/fs/cgroup")
PERIOD_US = 100_000
_warned: list[str] = []


class CpuQuota:
    def __init__(self, directory: Path, cpus: float) -> None:
        self.directory = directory
        self.cpus = cpus

    @classmethod
    def apply(cls, pid: int, cpus: float, root: Path = CGROUP_ROOT) -> CpuQuota | None:
        """Hold ``pid`` to ``cpus`` CPUs; None (and one warning) where cgroups can't be used."""
        if cpus <= 0:
            raise ValueError(f"a CPU quota must be above 0 CPUs, not {cpus}")
        quota = max(1000, round(cpus * PERIOD_US))
        directory = None
        try:
            if (root / "cgroup.controllers").is_file():  # v2, one hierarchy
                directory = root / f"podium-{pid}"
                _enable_cpu_controller(root)
                directory.mkdir()
                (directory / "cpu.max").write_text(f"{quota} {PERIOD_US}")
            elif (root / "cpu" / "cpu.cfs_quota_us").is_file():  # v1, the cpu hierarchy
                directory = root / "cpu" / f"podium-{pid}"
                directory.mkdir()
                (directory / "cpu.cfs_period_us").write_text(str(PERIOD_US))
                (directory / "cpu.cfs_quota_us").write_text(str(quota))
            else:
                raise OSError(f"no cgroup CPU controller under {root}")
            (directory / "cgroup.procs").write_text(str(pid))
        except OSError as exc:
            if directory is not None and directory.is_dir():
                _quietly_rmdir(directory)
            if not _warned:
                _warned.append(str(exc))
                log.warning("no CPU quota for Podium's own processes (%s): niceness only", exc)
            return None
        return cls(directory, cpus)

    def remove(self) -> None:
        """Delete the cgroup; its process must have exited (a live one is moved out first)."""
        procs = self.directory / "cgroup.procs"
        parent = self.directory.parent / "cgroup.procs"
        try:
            for pid in procs.read_text().split():
                parent.write_text(pid)
        except OSError:
            pass
        _quietly_rmdir(self.directory)


def _enable_cpu_controller(root: Path) -> None:
    control = root / "cgroup.subtree_control"
    if "cpu" not in control.read_text().split():
        control.write_text("+cpu")


def _quietly_rmdir(directory: Path) -> None:
    try:
        os.rmdir(directory)
    except OSError as exc:
        log.warning("could not remove cgroup %s: %s", directory, exc)
