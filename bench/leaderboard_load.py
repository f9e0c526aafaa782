"""Load test of the leaderboard read path: gunicorn on loopback, httpx clients, bounded requests.

Usage: python bench/leaderboard_load.py [--database podium_bench] [--workers 2]
       [--concurrency 4] [--requests 400] [--cold 15]

Seed the database first (``bench/seed_leaderboard.py``). Starts gunicorn (DEBUG off) on
127.0.0.1 against it, then for each page: ``--cold`` sequential views right after the split's
results changed (a new ``results_version``: nothing cached), then ``--requests`` views from
``--concurrency`` clients. Server time is the ``Server-Timing`` header (Django alone); client
time is the full round trip. Prints one Markdown table.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import numpy as np
import psycopg
from serve import start_gunicorn

ROOT = Path(__file__).resolve().parents[1]
BOARD = "/c/crag-mm-bench/multi-turn-qa/public-test/"
PAGES = {
    "leaderboard, page 1": BOARD,
    "leaderboard, page 5": f"{BOARD}?page=5",
    "slices: domain, truthfulness": f"{BOARD}slices/?dimension=domain&metric=truthfulness",
    "slices: turn, accuracy, page 3": f"{BOARD}slices/?dimension=turn&metric=accuracy&page=3",
}


@dataclass
class Sample:
    server_ms: float
    client_ms: float


def server_ms(response: httpx.Response) -> float:
    timing = response.headers.get("server-timing", "")
    if not timing.startswith("app;dur="):
        raise RuntimeError(f"{response.url}: no Server-Timing header (got {timing!r})")
    return float(timing.removeprefix("app;dur="))


async def fetch(client: httpx.AsyncClient, path: str) -> Sample:
    started = time.perf_counter()
    response = await client.get(path)
    elapsed = (time.perf_counter() - started) * 1000
    if response.status_code != 200:
        raise RuntimeError(f"GET {path}: HTTP {response.status_code}")
    return Sample(server_ms(response), elapsed)


async def load(base: str, path: str, requests: int, concurrency: int) -> tuple[list[Sample], float]:
    """``requests`` GETs of ``path`` from ``concurrency`` clients; the samples and wall seconds."""
    queue: asyncio.Queue[None] = asyncio.Queue()
    for _ in range(requests):
        queue.put_nowait(None)
    samples: list[Sample] = []

    async def client_loop() -> None:
        async with httpx.AsyncClient(base_url=base, timeout=30) as client:
            while not queue.empty():
                queue.get_nowait()
                samples.append(await fetch(client, path))

    started = time.perf_counter()
    await asyncio.gather(*(client_loop() for _ in range(concurrency)))
    return samples, time.perf_counter() - started


async def cold(base: str, path: str, database_url: str, times: int) -> list[Sample]:
    """Views right after the split's results changed, so nothing of them is cached."""
    samples = []
    async with httpx.AsyncClient(base_url=base, timeout=30) as client:
        with psycopg.connect(database_url, autocommit=True) as conn:
            for _ in range(times):
                conn.execute("UPDATE leaderboard_split SET results_version = gen_random_uuid()")
                samples.append(await fetch(client, path))
    return samples


def percentiles(values: list[float]) -> str:
    p50, p95 = np.percentile(values, [50, 95])
    return f"{p50:.1f} / {p95:.1f}"


def start_server(database_url: str, port: int, workers: int) -> subprocess.Popen:
    env = {**os.environ, "DATABASE_URL": database_url, "DEBUG": "0"}
    env.setdefault("DJANGO_SETTINGS_MODULE", "podium.settings")
    return start_gunicorn(env, port, workers=workers)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database", default="podium_bench")
    parser.add_argument("--server", default="postgres://postgres@127.0.0.1:5432")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--workers", type=int, default=2, help="gunicorn worker processes")
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--requests", type=int, default=400, help="per page")
    parser.add_argument("--cold", type=int, default=15, help="uncached views per page")
    args = parser.parse_args()
    database_url = f"{args.server}/{args.database}"
    base = f"http://127.0.0.1:{args.port}"
    server = start_server(database_url, args.port, args.workers)
    print(
        "| page | uncached: server p50 / p95 ms | loaded: server p50 / p95 ms "
        "| loaded: client p50 / p95 ms | requests/s |"
    )
    print("| --- | --- | --- | --- | --- |")
    try:
        for name, path in PAGES.items():
            first = asyncio.run(cold(base, path, database_url, args.cold))
            samples, wall = asyncio.run(load(base, path, args.requests, args.concurrency))
            print(
                f"| {name} | {percentiles([s.server_ms for s in first])} "
                f"| {percentiles([s.server_ms for s in samples])} "
                f"| {percentiles([s.client_ms for s in samples])} "
                f"| {len(samples) / wall:.0f} |"
            )
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    main()
