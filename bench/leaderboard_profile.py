"""In-process profile of the uncached leaderboard read path: wall, SQL and Python CPU time.

Usage: python bench/leaderboard_profile.py [--database podium_bench] [--views 12]
       [--profile "leaderboard, page 1"]

Seed the database first (``bench/seed_leaderboard.py``). For each page of
``leaderboard_load.PAGES``: ``--views`` views through Django's test client, each right after the
split's ``results_version`` changed (nothing cached); prints the median wall time, time inside
``cursor.execute`` (SQL) and this process's CPU time, and the mean time of the garbage
collector's runs during a view (GC). Django is set up by ``podium.wsgi``, as in the web
process. ``--profile`` names a page to profile (cProfile, its last view, the 30 costliest calls
by cumulative time). Then the write side: the median time of ``board_store.results_changed`` on the
pages' split (what every change of its results calls: the version, and where boards are
stored, ranking them again), ``--views`` times.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import os
import pstats
import statistics
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database", default="podium_bench")
    parser.add_argument("--server", default="postgres://postgres@127.0.0.1:5432")
    parser.add_argument("--views", type=int, default=12)
    parser.add_argument("--profile", default="")
    args = parser.parse_args()
    os.environ["DATABASE_URL"] = f"{args.server}/{args.database}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "podium.settings")
    os.environ["ALLOWED_HOSTS"] = "testserver"
    from django.db import connection
    from django.test import Client
    from leaderboard_load import BOARD, PAGES

    import podium.wsgi  # noqa: F401  (set up as the web process is: views loaded, gc frozen)
    from leaderboard import board_store
    from leaderboard.models import Split

    in_sql = [0.0]

    def timed(execute, sql, params, many, context):
        started = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            in_sql[0] += time.perf_counter() - started

    collecting = [0.0, 0.0]  # started, total (process CPU seconds)

    def collector(phase: str, info: dict) -> None:
        if phase == "start":
            collecting[0] = time.process_time()
        else:
            collecting[1] += time.process_time() - collecting[0]

    gc.callbacks.append(collector)
    client = Client()
    print("| page | wall ms | SQL ms | Python CPU ms | GC ms (mean) |")
    print("| --- | --- | --- | --- | --- |")
    for name, path in PAGES.items():
        walls, sqls, cpus = [], [], []
        collecting[1] = 0.0
        profile = cProfile.Profile()
        for view in range(args.views):
            Split.objects.update(results_version=uuid.uuid4())
            in_sql[0] = 0.0
            profiled = name == args.profile and view == args.views - 1
            with connection.execute_wrapper(timed):
                wall, cpu = time.perf_counter(), time.process_time()
                if profiled:
                    profile.enable()
                response = client.get(path)
                profile.disable()
                walls.append((time.perf_counter() - wall) * 1000)
                cpus.append((time.process_time() - cpu) * 1000)
            sqls.append(in_sql[0] * 1000)
            if response.status_code != 200:
                raise RuntimeError(f"GET {path}: HTTP {response.status_code}")
        medians = (statistics.median(v) for v in (walls, sqls, cpus))
        collected = collecting[1] * 1000 / args.views
        print(f"| {name} | " + " | ".join(f"{m:.1f}" for m in medians) + f" | {collected:.1f} |")
        if name == args.profile:
            pstats.Stats(profile).sort_stats("cumulative").print_stats(30)
    _, _, _, task_id, kind, _ = BOARD.split("/")
    split = Split.objects.get(task__task_id=task_id, kind=kind)
    changes = []
    for _ in range(args.views):
        started = time.perf_counter()
        board_store.results_changed(split.pk)
        changes.append((time.perf_counter() - started) * 1000)
    change = statistics.median(changes)
    print(f"| a change of its results (board_store.results_changed) | {change:.1f} | | | |")


if __name__ == "__main__":
    main()
