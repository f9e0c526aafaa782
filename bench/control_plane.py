"""The control plane's capacity (issue 36): its cost per run and per turn, then 10, 20 and 50
simulated GPU nodes against one PostgreSQL and one Redis.

Nodes are real ``celery worker`` processes (solo pool: one run at a time, as a GPU node) on
the ``gpu-l40s`` queue with the fake agent engine (``PODIUM_AGENT_ENGINE=fake``:
``workers/fake_engine.py``: every turn answered with zero work, no Docker), so what is
measured is Podium's own work around a run: the stage tasks, the database, the broker, the
object store. The control plane is PostgreSQL (a cluster of this bench's own, ``initdb``,
fsync off, ``max_connections`` 500), the Redis server of ``--redis-url`` (its database is
emptied; give it one nothing else uses) and one control-plane worker on ``build,judge,default``
(prefork, 2 processes); object storage is local files (``PODIUM_MEDIA_ROOT``: bytes counted
on its directory). The judge is the rules judge (no model call).

1. Cost: one node; ``--cost-runs`` runs of each size in ``--cost-turns`` (turns per run): CPU
   seconds per role (``/proc``), PostgreSQL transactions and rows written, Redis commands,
   bytes and files written to the store; per run, and split into a fixed part per run and a
   part per turn (a line through the sizes).
2. Nodes: for each count in ``--nodes``, fresh node workers; 10 s idle (each idle node's
   polling), then ``--runs-per-node`` x nodes runs of ``--turns`` turns queued at once:
   throughput (runs/min and turns/s, first queued to last done), the time a run waits in the
   running stage's queue (hand-over to a node's claim, from the workers' logs), each node's
   dead time (end of a run to its next claim), and each role's CPU as a share of the span.

All of it shares this machine's CPUs (and other jobs': the load average is printed): with 50
worker processes on two cores the throughput is the machine's, not the control plane's, so
size a deployment from the per-run and per-turn costs of part 1 (``docs/deploy.md``).

    python bench/control_plane.py --redis-url redis://127.0.0.1:6392/1 [--nodes 10,20,50]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "podium.settings")

from bench.control_plane_meter import (  # noqa: E402
    Meter,
    dead_times,
    delta,
    mem_available_gib,
    memory_mib,
    quantiles,
    running_queue_waits,
)
from tests.faults.services import Postgres  # noqa: E402

IDK = REPO / "examples/agents/idk"
GPU_QUEUE = "gpu-l40s"
CONTROL_QUEUES = "build,judge,default"
STATS_SETTLE_S = 11.0  # PostgreSQL 15: an idle backend reports its statistics within 10 s
CONNECTIONS = "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
NODE_MIB = 200  # a forked node worker's memory, about (its own pages and its share)


class Worker:
    """A ``celery worker`` process of the bench, its output in ``<root>/<name>.log``."""

    def __init__(self, root: Path, name: str, queues: str, env: dict[str, str], pool: list[str]):
        self.name, self.log_path = name, root / f"{name}.log"
        command = [
            sys.executable, "-m", "celery", "-A", "podium", "worker", *pool, "-Q", queues,
            "-n", f"{name}@%h", "--without-gossip", "--without-mingle", "-l", "info",
        ]  # fmt: skip
        var = root / name
        var.mkdir(parents=True, exist_ok=True)
        node_env = {**env, "PODIUM_NODE_ID": name, "PODIUM_VAR_DIR": str(var)}
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                command, cwd=REPO, env=node_env, stdout=log, stderr=subprocess.STDOUT
            )

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def ready(self) -> bool:
        if self.process.poll() is not None:
            raise RuntimeError(f"{self.name} exited: {self.log()[-3000:]}")
        return " ready." in self.log()


class Nodes:
    """``count`` simulated GPU nodes (``bench/control_plane_nodes.py``): one process forking
    a worker per node, each logging to ``<root>/<prefix>-<n>.log``."""

    def __init__(self, root: Path, prefix: str, count: int, env: dict[str, str]) -> None:
        self.name, self.count = prefix, count
        self.logs = [root / f"{prefix}-{n}.log" for n in range(count)]
        command = [sys.executable, str(REPO / "bench/control_plane_nodes.py"), str(count),
                   prefix, str(root), GPU_QUEUE]  # fmt: skip
        with (root / f"{prefix}.log").open("ab") as log:
            self.process = subprocess.Popen(
                command, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT
            )

    def texts(self) -> list[str]:
        return [p.read_text(errors="replace") if p.exists() else "" for p in self.logs]

    def ready(self) -> bool:
        if self.process.poll() is not None:
            raise RuntimeError(f"the nodes exited: {self.texts()[0][-3000:]}")
        return all(" ready." in text for text in self.texts())

    def pids(self) -> list[int]:
        children = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children")
        return [int(pid) for pid in children.read_text().split()]


def stop(workers: list[Worker | Nodes]) -> None:
    for worker in workers:
        worker.process.terminate()
    for worker in workers:
        try:
            worker.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            worker.process.kill()
            worker.process.wait()


def wait_until(what: str, check: Any, timeout_s: float, every_s: float = 0.5) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout_s:.0f} s waiting for {what}")
        time.sleep(every_s)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--redis-url", required=True, help="a Redis database the bench empties")
    parser.add_argument("--nodes", default="10,20,50")
    parser.add_argument("--runs-per-node", type=int, default=5)
    parser.add_argument("--turns", type=int, default=20, help="turns per run in part 2")
    parser.add_argument("--cost-runs", type=int, default=30)
    parser.add_argument("--cost-turns", default="10,100")
    parser.add_argument("--timeout", type=float, default=1800)
    parser.add_argument("--out", type=Path, help="write the results here as JSON")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="podium-control-plane-", dir="/var/tmp"))
    postgres = Postgres()
    with (postgres.data / "postgresql.conf").open("a") as conf:
        conf.write("\nmax_connections = 500\n")
    postgres.start()
    workers: list[Worker | Nodes] = []
    try:
        postgres.create_database("podium")
        env = {
            **os.environ,
            "DATABASE_URL": postgres.url("podium"),
            "REDIS_URL": args.redis_url,
            "PODIUM_MEDIA_ROOT": str(root / "media"),
            "PODIUM_AGENT_ENGINE": "fake",
            "PODIUM_IMAGE_STORE": "never",
            "PODIUM_LOG_FORMAT": "plain",
            "PYTHONUNBUFFERED": "1",
        }
        os.environ.update(env)
        results = _bench(args, root, env, postgres, workers)
        print(json.dumps(results, indent=1))
        if args.out:
            args.out.write_text(json.dumps(results, indent=1) + "\n")
    finally:
        stop(workers)
        postgres.close()
        subprocess.run(["rm", "-rf", str(root)], check=False)


def _bench(
    args: argparse.Namespace,
    root: Path,
    env: dict[str, str],
    pg: Postgres,
    workers: list[Worker | Nodes],
) -> dict[str, Any]:
    import django

    django.setup()
    import redis
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    broker = redis.Redis.from_url(args.redis_url)
    broker.flushdb()
    redis_pid = int(broker.info("server")["process_id"])
    control = Worker(root, "control", CONTROL_QUEUES, env, ["--pool=prefork", "--concurrency=2"])
    workers.append(control)
    (root / "media").mkdir(exist_ok=True)
    meter = Meter(pg.url("podium"), args.redis_url, root / "media")
    postmaster = pg._process
    assert postmaster is not None
    meter.roles = {
        "postgres": [postmaster.pid],
        "redis": [redis_pid],
        "control": [control.process.pid],
    }
    results: dict[str, Any] = {"load_start": os.getloadavg()}
    node = Nodes(root, "node", 1, env)
    workers.append(node)
    wait_until("the first workers", lambda: control.ready() and node.ready(), 300)
    meter.roles["nodes"] = [node.process.pid]
    results["cost"] = cost(args, root, meter)
    stop([node])
    workers.remove(node)
    results["nodes"] = []
    for count in [int(n) for n in args.nodes.split(",")]:
        if mem_available_gib() < count * NODE_MIB / 1024 + 3:
            print(f"{count} nodes skipped: {mem_available_gib():.1f} GiB available", flush=True)
            results["nodes"].append({"nodes": count, "skipped": f"{mem_available_gib():.1f} GiB"})
            continue
        nodes = Nodes(root, f"n{count}", count, env)
        workers.append(nodes)
        wait_until(f"{count} nodes", nodes.ready, 900, 2.0)
        meter.roles["nodes"] = [nodes.process.pid]
        results["nodes"].append(phase(args, root, meter, control, nodes))
        stop([nodes])
        workers.remove(nodes)
    results["load_end"] = os.getloadavg()
    return results


def _measure(
    meter: Meter, work: Any, runs: list[int], timeout_s: float
) -> tuple[dict[str, Any], float]:
    """Snapshots around ``runs`` (queued already) until they all end; the delta and the span."""
    from django.db import connection

    before = meter.snapshot()
    started = time.monotonic()
    polls, connections = 0, 0

    def finished() -> bool:
        nonlocal polls, connections
        polls += 1
        with connection.cursor() as cursor:
            cursor.execute(CONNECTIONS)
            connections = max(connections, cursor.fetchone()[0])
        return bool(work.finished(runs))

    wait_until(f"{len(runs)} runs", finished, timeout_s, 0.5)
    span = time.monotonic() - started
    after = meter.snapshot()
    connection.close()
    time.sleep(STATS_SETTLE_S)
    after.commits, after.rows = meter.pg_counts()
    change = delta(before, after)
    change["pg_commits"] -= 2 * polls  # not the bench's own polling
    change["pg_connections_max"] = connections
    return change, span


def cost(args: argparse.Namespace, root: Path, meter: Meter) -> dict[str, Any]:
    from bench.scale_out_work import Workload

    sizes = [int(t) for t in args.cost_turns.split(",")]
    per_run = {}
    for turns in sizes:
        work = Workload.create(IDK, turns, scratch=root / f"split-{turns}")
        work.warm_up(args.timeout)  # the split's bundle extracted once on the node
        warm(work, 4, args.timeout)  # every control-plane process has done each stage once
        runs = work.queue(args.cost_runs)
        change, span = _measure(meter, work, runs, args.timeout)
        check_done(runs, turns)
        per_run[turns] = _divided(change, args.cost_runs)
        print(
            f"cost, {turns} turns/run:",
            json.dumps(per_run[turns]),
            f"span {span:.1f} s",
            flush=True,
        )
    low, high = sizes[0], sizes[-1]
    per_turn = _line(per_run[low], per_run[high], high - low)
    fixed = _line(per_run[low], per_turn, -low)  # per run at 0 turns
    return {"per_run": per_run, "per_turn": per_turn, "fixed_per_run": fixed}


def warm(work: Any, count: int, timeout_s: float) -> None:
    """``count`` runs queued and done before anything is measured."""
    runs = work.queue(count)
    wait_until(f"{count} warm-up runs", lambda: work.finished(runs), timeout_s)
    time.sleep(STATS_SETTLE_S)


def _divided(change: dict[str, Any], by: int) -> dict[str, float]:
    flat = {f"cpu_s.{k}": v for k, v in change["cpu_s"].items()}
    flat |= {f"pg_rows.{k}": v for k, v in change["pg_rows"].items()}
    for name in ("pg_commits", "redis_commands", "store_bytes", "store_files"):
        flat[name] = change[name]
    return {k: round(v / by, 4) for k, v in flat.items()}


def _line(a: dict[str, float], b: dict[str, float], dx: int) -> dict[str, float]:
    """(b - a) / dx per key when dx > 0 (the slope), else a + b x dx (a at x = 0 from slope b)."""
    keys = sorted({*a, *b})
    if dx > 0:
        return {k: round((b.get(k, 0) - a.get(k, 0)) / dx, 5) for k in keys}
    return {k: round(a.get(k, 0) + b.get(k, 0) * dx, 4) for k in keys}


def check_done(runs: list[int], turns: int) -> None:
    from leaderboard.models import EvaluationRun, ItemAnswer

    rows = EvaluationRun.objects.filter(pk__in=runs)
    bad = [f"#{r.pk} {r.state} {r.failure_reason[:200]}" for r in rows if r.state != "done"]
    answers = ItemAnswer.objects.filter(run__in=runs).count()
    if bad or answers != turns * len(runs):
        raise RuntimeError(f"runs not done: {bad[:5]}; {answers} answers of {turns * len(runs)}")


def phase(
    args: argparse.Namespace, root: Path, meter: Meter, control: Worker, nodes: Nodes
) -> dict[str, Any]:
    from bench.scale_out_work import Workload

    count, runs_n = nodes.count, args.runs_per_node * nodes.count
    work = Workload.create(IDK, args.turns, scratch=root / f"split-n{count}")
    work.warm_up(args.timeout)  # the submission's fake image recorded
    warm(work, count, args.timeout)  # each node's first run (imports, the split's bundle)
    load_start = os.getloadavg()[0]
    idle_before = meter.snapshot()
    time.sleep(10.0)
    idle = delta(idle_before, meter.snapshot())
    queued_at = time.time()
    runs = work.queue(runs_n)
    change, span = _measure(meter, work, runs, args.timeout)
    check_done(runs, args.turns)
    logs = nodes.texts()
    waits = running_queue_waits([control.log(), *logs], set(runs))
    gaps = [gap for text in logs for gap in dead_times(text, queued_at)]
    cores = len(os.sched_getaffinity(0))
    result = {
        "nodes": count,
        "runs": runs_n,
        "turns_per_run": args.turns,
        "span_s": round(span, 1),
        "runs_per_min": round(60 * runs_n / span, 1),
        "turns_per_s": round(runs_n * args.turns / span, 1),
        "running_queue_wait": quantiles(waits) | {"count": len(waits)},
        "node_dead_time": quantiles(gaps) | {"count": len(gaps)},
        "pg_connections_max": change["pg_connections_max"],
        "node_rss_mib_mean": round(memory_mib(nodes.pids(), "rss") / count),
        "node_pss_mib_mean": round(memory_mib(nodes.pids(), "pss") / count),
        "cpu_share_of_machine": {
            r: round(s / (span * cores), 3) for r, s in change["cpu_s"].items()
        },
        "per_run": _divided(change, runs_n),
        "idle_10s": {
            "cpu_s": idle["cpu_s"],
            "redis_commands": idle["redis_commands"],
            "redis_top": idle["redis_top"],
            "pg_commits": idle["pg_commits"],
        },
        "load_start": round(load_start, 2),
        "load_end": round(os.getloadavg()[0], 2),
    }
    print(f"{count} nodes:", json.dumps(result), flush=True)
    return result


if __name__ == "__main__":
    main()
