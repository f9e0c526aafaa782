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

Reported per phase: throughput (runs per minute, first queued to last done), queue wait (queued
to its build stage's claim), dead time on a worker (between the end of one task and the start
of the next while runs are still queued or in progress, from the workers' logs), every run done
with each turn answered once by one agent process. Needs a scratch database it may migrate and
a Redis database no other worker listens on; root (it runs engines):

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench_scale \\
    REDIS_URL=redis://127.0.0.1:6379/10 python bench/scale_out.py [--runs 100]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
from datetime import datetime
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "podium.settings")

from tests.cluster.nodes import Cluster, Node, wait_until  # noqa: E402

COUNTER = REPO / "tests/e2e/agents/counter"
# "[2026-11-25 21:02:03,456: INFO/MainProcess] Task gpu.answer_run[<id>] received"
TASK_LINE = re.compile(
    r"^\[(?P<at>[\d-]+ [\d:]+,\d{3}): \w+/MainProcess\] Task (?P<name>[\w.]+)\[(?P<id>[\w-]+)\] "
    r"(?P<what>received|succeeded|raised|retry)"
)


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def dead_times(log: str, since: datetime, until: datetime) -> list[float]:
    """Seconds between the end of one task and the start of the next on one worker."""
    gaps, ended = [], None
    for line in log.splitlines():
        match = TASK_LINE.match(line)
        if match is None:
            continue
        at = datetime.strptime(match["at"], "%Y-%m-%d %H:%M:%S,%f")
        if not since <= at <= until:
            continue
        if match["what"] == "received":
            if ended is not None:
                gaps.append((at - ended).total_seconds())
            ended = None
        else:
            ended = at
    return gaps


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
    node_a = cluster.add_node("node-a")
    first = work.warm_up(args.timeout)
    print(f"warm-up on node-a (build, image stored): {first:.1f} s", flush=True)

    one = phase("1 node", work, [node_a], args)
    node_a.stop_worker()
    node_b = cluster.add_node("node-b", base_image=False)
    late = work.warm_up(args.timeout)
    print(f"late node-b, first run (image loaded from storage): {late:.1f} s", flush=True)
    node_a.start_worker(cluster.env)
    node_a.wait_ready()
    two = phase("2 nodes", work, [node_a, node_b], args)
    print(json.dumps({"late_join_first_run_s": round(late, 1), "one": one, "two": two}, indent=1))
    print(f"throughput ratio, 2 nodes / 1 node: {two['runs_per_min'] / one['runs_per_min']:.2f}")


def phase(label: str, work, nodes: list[Node], args: argparse.Namespace) -> dict:  # type: ignore[no-untyped-def]
    offsets = {node.name: len(node.log()) for node in nodes}
    runs = work.queue(args.runs)
    wait_until(f"{label}: {args.runs} runs", lambda: work.finished(runs), args.timeout, 1.0)
    result = work.check(runs)
    local = datetime.now().astimezone().tzinfo
    since = result.pop("first_queued").astimezone(local).replace(tzinfo=None)
    until = result.pop("last_done").astimezone(local).replace(tzinfo=None)
    gaps = {node.name: dead_times(node.log()[offsets[node.name] :], since, until) for node in nodes}
    every = [gap for node_gaps in gaps.values() for gap in node_gaps]
    result |= {
        "nodes": len(nodes),
        "dead_time_p50_s": round(percentile(every, 0.5), 3),
        "dead_time_p95_s": round(percentile(every, 0.95), 3),
        "dead_time_max_s": round(max(every, default=float("nan")), 3),
        "tasks_per_node": {name: len(node_gaps) + 1 for name, node_gaps in gaps.items()},
    }
    print(label, json.dumps(result), flush=True)
    return result


if __name__ == "__main__":
    main()
