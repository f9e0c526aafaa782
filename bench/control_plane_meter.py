"""What ``bench/control_plane.py`` reads of the control plane between two instants: CPU of
process trees (``/proc``), PostgreSQL's transactions and rows (``pg_stat_database``,
``pg_stat_user_tables``), Redis's commands (``INFO commandstats``), bytes and files written to
the object store (a local-files store: its directory), and the workers' log lines (claims and
hand-overs, for the time a run waited in the running stage's queue). No Django here."""

from __future__ import annotations

import os
import re
import statistics
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import psycopg
import redis

TICKS = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> list[str] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text[text.rindex(")") + 2 :].split()  # fields from the state on (3rd)


def tree_cpu_s(root: int) -> float:
    """CPU seconds of ``root`` and its live descendants, with the children each has reaped
    (utime + stime + cutime + cstime of every live process of the tree)."""
    children: dict[int, list[int]] = {}
    fields: dict[int, list[str]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (stat := _stat(int(entry))) is not None:
            fields[int(entry)] = stat
            children.setdefault(int(stat[1]), []).append(int(entry))
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        if pid in fields:
            total += sum(int(x) for x in fields[pid][11:15])  # utime stime cutime cstime
        todo.extend(children.get(pid, []))
    return total / TICKS


@dataclass
class Snapshot:
    cpu_s: dict[str, float]  # per role: process trees' CPU
    commits: int
    rows: dict[str, int]  # inserted, updated, deleted over the user tables; written.<table>
    redis_calls: dict[str, int]  # per command
    store_bytes: int
    store_files: int


@dataclass
class Meter:
    """``roles``: role name -> root pids (PostgreSQL's postmaster, redis-server, workers)."""

    pg_url: str
    redis_url: str
    store: Path
    roles: dict[str, list[int]] = field(default_factory=dict)

    def snapshot(self) -> Snapshot:
        cpu = {role: sum(tree_cpu_s(pid) for pid in pids) for role, pids in self.roles.items()}
        commits, rows = self.pg_counts()
        stats = redis.Redis.from_url(self.redis_url).info("commandstats")
        calls = {name.removeprefix("cmdstat_"): int(v["calls"]) for name, v in stats.items()}
        sizes = [p.stat().st_size for p in self.store.rglob("*") if p.is_file()]
        return Snapshot(cpu, commits, rows, calls, sum(sizes), len(sizes))

    def pg_counts(self) -> tuple[int, dict[str, int]]:
        """Transactions committed in the database and rows written to its tables, as the
        statistics say: a backend reports its own at most once a second, and only after 10 s
        when idle (PostgreSQL 15), so read them again a while after the work."""
        with psycopg.connect(self.pg_url, autocommit=True) as conn:
            commits = conn.execute(
                "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()"
            ).fetchone()
            tables = conn.execute(
                "SELECT relname, n_tup_ins, n_tup_upd, n_tup_del FROM pg_stat_user_tables"
            ).fetchall()
        assert commits is not None
        rows = {"inserted": 0, "updated": 0, "deleted": 0}
        for name, *counts in tables:
            rows["inserted"] += counts[0]
            rows["updated"] += counts[1]
            rows["deleted"] += counts[2]
            rows[f"written.{name.removeprefix('leaderboard_')}"] = sum(counts)
        return int(commits[0]), rows


def delta(before: Snapshot, after: Snapshot) -> dict[str, object]:
    """What happened between two snapshots (Redis's commands: the ten most called)."""
    calls = {k: n - before.redis_calls.get(k, 0) for k, n in after.redis_calls.items()}
    calls = {k: n for k, n in sorted(calls.items(), key=lambda kv: -kv[1]) if n > 0}
    return {
        "cpu_s": {r: round(after.cpu_s[r] - before.cpu_s.get(r, 0.0), 2) for r in after.cpu_s},
        "pg_commits": after.commits - before.commits,
        "pg_rows": {
            k: n - before.rows.get(k, 0) for k, n in after.rows.items() if n - before.rows.get(k, 0)
        },
        "redis_commands": sum(calls.values()),
        "redis_top": dict(list(calls.items())[:10]),
        "store_bytes": after.store_bytes - before.store_bytes,
        "store_files": after.store_files - before.store_files,
    }


# Podium's plain log format: "2026-12-07 02:10:11,123 INFO podium.pipeline [run 5]: ..."
_LINE = re.compile(
    r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) \w+ [\w.]+.*?: run #(\d+): "
    r"(claimed for running|handed over to running)"
)
_DONE = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) .*Task gpu\.\S+ succeeded")


def _when(text: str) -> float:
    return datetime.strptime(text, "%Y-%m-%d %H:%M:%S,%f").timestamp()


def running_queue_waits(logs: list[str], runs: set[int]) -> list[float]:
    """For each of ``runs``: seconds from its hand-over to the running stage (a control-plane
    worker's log) to a node's claim (a node's log)."""
    handed: dict[int, float] = {}
    claimed: dict[int, float] = {}
    for text in logs:
        for line in text.splitlines():
            if (match := _LINE.match(line)) and int(match[2]) in runs:
                into = claimed if match[3].startswith("claimed") else handed
                into.setdefault(int(match[2]), _when(match[1]))
    return [claimed[r] - handed[r] for r in runs if r in claimed and r in handed]


def dead_times(node_log: str, since: float) -> list[float]:
    """A node's idle gaps after ``since`` (a time.time()): from the end of one running-stage
    task to its next claim."""
    gaps, ended = [], None
    for line in node_log.splitlines():
        if match := _DONE.match(line):
            ended = _when(match[1])
        elif (match := _LINE.match(line)) and ended is not None:
            if ended >= since:
                gaps.append(_when(match[1]) - ended)
            ended = None
    return gaps


def memory_mib(pids: list[int], kind: str) -> float:
    """Memory of these processes (not their children), MiB: ``rss`` (resident) or ``pss``
    (proportional: each shared page divided among the processes sharing it)."""
    file, field = {"rss": ("status", "VmRSS:"), "pss": ("smaps_rollup", "Pss:")}[kind]
    total = 0
    for pid in pids:
        for line in Path(f"/proc/{pid}/{file}").read_text().splitlines():
            if line.startswith(field):
                total += int(line.split()[1])
    return total / 1024


def mem_available_gib() -> float:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) / 1024**2
    raise RuntimeError("no MemAvailable in /proc/meminfo")


def quantiles(values: list[float]) -> dict[str, float | None]:
    """p50, p95 and max, in seconds (None when there are no values)."""
    if not values:
        return {"p50_s": None, "p95_s": None, "max_s": None}
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {
        "p50_s": round(statistics.median(ordered), 4),
        "p95_s": round(p95, 4),
        "max_s": round(ordered[-1], 4),
    }
