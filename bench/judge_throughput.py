"""Judge throughput against a local OpenAI-compatible server, cold and with a warm cache.

The server (tests/fake_openai.py, a threaded HTTP server) runs in its own process and answers
every request after ``--latency`` seconds, like a judge model would. The ideal throughput is
``concurrency / latency``; the goal is at least 85 % of it. The same turns are then judged again
with the warm cache (goal: at least 100 times faster than cold). Peak memory is the process's
maximum resident set size.

    python bench/judge_throughput.py --turns 10000 --latency 0.1 --concurrency 64
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evaluator.benchmarks.crag_mm.prompt import CragMMRubric
from evaluator.judges import SQLiteCache, judge_all, make_judge
from evaluator.records import JudgeRequest
from tests.fake_openai import serve


def turns(n: int) -> list[JudgeRequest]:
    return [
        JudgeRequest(
            query=f"What is the top speed of the car in this picture? (turn {i})",
            ground_truth=f"The car reaches {200 + i % 97} km/h.",
            response=f"Its top speed is about {120 + i % 61} mph, according to the maker.",
        )
        for i in range(n)
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=10_000)
    parser.add_argument("--latency", type=float, default=0.1, help="server latency, seconds")
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--progress", action="store_true", help="show progress bars")
    args = parser.parse_args()
    if args.latency <= 0 or args.concurrency <= 0 or args.turns <= 0:
        parser.error("--latency, --concurrency and --turns must be positive")

    receive, send = multiprocessing.Pipe(duplex=False)
    server = multiprocessing.get_context("spawn").Process(
        target=serve, args=(args.latency, send), daemon=True
    )
    server.start()
    url = receive.recv()
    requests = turns(args.turns)
    judge = make_judge(
        "openai", CragMMRubric(), base_url=url, model="bench-judge", structured="none",
        concurrency=args.concurrency, max_retries=0,
    )  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        cache_path = Path(tmp) / "judgments.sqlite"
        cpu_started = time.process_time()
        cold = judge_all(judge, requests, SQLiteCache(cache_path), progress=args.progress)
        cpu_per_turn = (time.process_time() - cpu_started) / args.turns
        warm = judge_all(judge, requests, SQLiteCache(cache_path), progress=args.progress)
    server.terminate()
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    bound = args.concurrency / args.latency
    rate = cold.stats.model_calls / cold.stats.seconds
    print(f"turns {args.turns}, latency {args.latency * 1000:.0f} ms, "
          f"concurrency {args.concurrency}: bound {bound:.0f} turns/s")  # fmt: skip
    print(f"cold:  {cold.stats.seconds:.2f} s, {rate:.0f} turns/s = {rate / bound:.1%} of bound "
          f"({cold.stats.model_calls} model calls, {cold.stats.unjudged} unjudged)")  # fmt: skip
    print(f"warm:  {warm.stats.seconds:.3f} s ({warm.stats.cache_hits} cache hits, "
          f"{warm.stats.model_calls} model calls): "
          f"{cold.stats.seconds / warm.stats.seconds:.0f}x faster than cold")  # fmt: skip
    print(f"judging process CPU: {cpu_per_turn * 1000:.2f} ms per turn (one core sustains at most "
          f"{1 / cpu_per_turn:.0f} turns/s); load average {os.getloadavg()[0]:.1f} on "
          f"{os.cpu_count()} cores")  # fmt: skip
    print(f"peak memory (max RSS of the judging process): {peak_mib:.0f} MiB")


if __name__ == "__main__":
    main()
