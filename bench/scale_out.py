"""Scale-out: the same queue of runs over one worker node, then two, side by side.

Nodes as ``tests/cluster/nodes.py`` makes them: each its own ``dockerd``, cache directory and
``celery worker`` (solo pool: one task at a time, as a GPU node runs one agent); PostgreSQL,
Redis and SeaweedFS's S3 server shared. The agent is ``tests/e2e/agents/counter``: it sleeps
0.4 s per batch of two turns and records, in every answer, its own count of the turns it was
asked, so a run asked twice (or a turn asked twice) shows.

1. node-a builds the agent once (a warm-up run; the image goes to storage);
2. ``--runs`` runs queued at once (clones of that submission, one team, so the scoring stage's
   comparisons stay one per run), worked by node-a alone;
3. node-b joins with no base image: one run on it alone (its engine loads the image from
   storage: the late join's cost), then ``--runs`` new runs queued at once, worked by both.

Each node is pinned to a CPU of its own (``taskset``: its engine, so its containers, and its
worker), node-a to the first CPU this process may use and node-b to the second: a node has
one CPU in either phase, as a machine of its own would, and the 2-node phase twice the
1-node phase's, however the scheduler would have spread them. PostgreSQL, Redis, the S3 server
and this process are not pinned, and other jobs on the machine still share those CPUs: the
load average is printed with the result. Every phase starts with fresh worker processes, so
the idle time before a phase is not counted.

Reported per phase: throughput (runs per minute, first queued to last done), queue wait (queued
to its build stage's claim), dead time on a worker from the workers' own
``podium_worker_dead_time_seconds`` (``leaderboard/pipeline/ownership.py``: idle from the end of
one stage task to the next claim) until no run waits for a worker any more (read once a
second; afterwards the nodes wait for each other's hand-overs, not for a queue): observations,
mean, and p50 / p95 / max as the histogram's bucket bounds; stage tasks per node from the same
histogram over the whole phase (a fresh worker's first claim records none: observations + 1),
and runs per node by the worker that finished them (the runs' ``worker_id``); every run done
with each turn answered once by one agent process; the load average at the start and end of
each phase. Needs a scratch database it may migrate and a Redis database no other worker
listens on; root (it runs engines):

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench_scale \\
    REDIS_URL=redis://127.0.0.1:6379/10 python bench/scale_out.py [--runs 100]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "podium.settings")

from tests.cluster.nodes import Cluster, Node, wait_until  # noqa: E402

COUNTER = REPO / "tests/e2e/agents/counter"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--conversations", type=int, default=10, help="turns per run (1 each)")
    parser.add_argument("--timeout", type=float, default=1800)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="podium-nodes-", dir="/var/tmp"))
    env = {key: os.environ[key] for key in ("DATABASE_URL", "REDIS_URL")}
    # the image stored by the build stage: node-b, joining after node-a's worker stopped, loads it
    cluster = Cluster(
        root, {**env, "PODIUM_HEARTBEAT_TIMEOUT_S": "120", "PODIUM_IMAGE_STORE": "always"}
    )
    os.environ.update(cluster.s3_env)  # this process stores the submission and split there too
    try:
        _bench(cluster, args)
    finally:
        cluster.close()


def _bench(cluster: Cluster, args: argparse.Namespace) -> None:
    import django

    django.setup()
    import redis
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    redis.Redis.from_url(os.environ["REDIS_URL"]).flushdb()
    from bench.scale_out_work import Workload

    work = Workload.create(COUNTER, args.conversations, scratch=cluster.root / "split")
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        raise SystemExit("two CPUs needed: one for each node")
    node_a = cluster.add_node("node-a", cpus=str(cpus[0]))
    first = work.warm_up(args.timeout)
    print(f"warm-up on node-a (build, image stored): {first:.1f} s", flush=True)

    one = phase("1 node", work, cluster, [node_a], args)
    node_a.stop_worker()
    node_b = cluster.add_node("node-b", base_image=False, cpus=str(cpus[1]))
    late = work.warm_up(args.timeout)
    print(f"late node-b, first run (image loaded from storage): {late:.1f} s", flush=True)
    two = phase("2 nodes", work, cluster, [node_a, node_b], args)
    print(json.dumps({"late_join_first_run_s": round(late, 1), "one": one, "two": two}, indent=1))
    ratio = two["runs_per_min"] / one["runs_per_min"]
    loads = [one["load_start"], one["load_end"], two["load_start"], two["load_end"]]
    print(f"throughput ratio, 2 nodes / 1 node: {ratio:.2f} (load {min(loads)}-{max(loads)})")


def phase(label: str, work, cluster: Cluster, nodes: list[Node], args: argparse.Namespace) -> dict:  # type: ignore[no-untyped-def]
    """``args.runs`` runs queued at once and worked by ``nodes``, each with a fresh worker."""
    from leaderboard.models import EvaluationRun
    from podium.monitoring_events import WORKER_DEAD_TIME, events_redis, read

    for node in nodes:
        node.stop_worker()
        node.start_worker(cluster.env)
    for node in nodes:
        node.wait_ready()
    load_start = os.getloadavg()[0]
    before = read(WORKER_DEAD_TIME, events_redis())
    runs = work.queue(args.runs)
    waiting = EvaluationRun.objects.filter(pk__in=runs, worker_id="").exclude(
        state__in=EvaluationRun.TERMINAL_STATES
    )
    drained: list = []  # the figures when no run waited for a worker any more

    def finished() -> bool:
        if not drained and not waiting.exists():
            drained.append(read(WORKER_DEAD_TIME, events_redis()))
        return work.finished(runs)

    wait_until(f"{label}: {args.runs} runs", finished, args.timeout, 1.0)
    result = work.check(runs)
    result.pop("first_queued"), result.pop("last_done")
    after = read(WORKER_DEAD_TIME, events_redis())
    gaps = {n.name: less(drained[0].get((n.name,)), before.get((n.name,))) for n in nodes}
    claims = {n.name: less(after.get((n.name,)), before.get((n.name,))).count for n in nodes}
    every = sum(gaps.values(), Gaps())
    finishers = EvaluationRun.objects.filter(pk__in=runs).values_list("worker_id", flat=True)
    result |= {
        "nodes": len(nodes),
        "cpus": {node.name: node.cpus for node in nodes},
        "dead_time_observations": every.count,
        "dead_time_mean_s": round(every.sum / every.count, 4) if every.count else None,
        "dead_time_p50_le_s": every.bound(0.5),
        "dead_time_p95_le_s": every.bound(0.95),
        "dead_time_max_le_s": every.bound(1.0),
        "stage_tasks_per_node": {name: n + 1 if n else 0 for name, n in claims.items()},
        "runs_finished_per_node": {
            node.name: sum(w.startswith(f"{node.name}/") for w in finishers) for node in nodes
        },
        "load_start": round(load_start, 2),
        "load_end": round(os.getloadavg()[0], 2),
    }
    print(label, json.dumps(result), flush=True)
    return result


class Gaps:
    """A node's dead-time observations over a span: count, sum and per-bucket counts."""

    def __init__(self, count: int = 0, total: float = 0.0, per_bucket: dict | None = None) -> None:
        self.count, self.sum, self.per_bucket = count, total, dict(per_bucket or {})

    def __add__(self, other: Gaps) -> Gaps:
        buckets = {b: self.per_bucket.get(b, 0) + other.per_bucket.get(b, 0)
                   for b in {*self.per_bucket, *other.per_bucket}}  # fmt: skip
        return Gaps(self.count + other.count, self.sum + other.sum, buckets)

    def bound(self, q: float) -> float | None:
        """The upper bound of the bucket holding the ``q`` quantile (inf: above the last)."""
        if not self.count:
            return None
        seen = 0
        for bound in sorted(self.per_bucket):
            seen += self.per_bucket[bound]
            if seen >= q * self.count:
                return bound
        return math.inf


def less(after, before) -> Gaps:  # type: ignore[no-untyped-def]
    """The observations of ``after`` (a ``monitoring_events.Series``) not in ``before``."""
    if after is None:
        return Gaps()
    if before is None:
        return Gaps(after.count, after.sum, after.per_bucket)
    buckets = {b: n - before.per_bucket.get(b, 0) for b, n in after.per_bucket.items()}
    return Gaps(after.count - before.count, after.sum - before.sum, buckets)


if __name__ == "__main__":
    main()
