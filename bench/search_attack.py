"""What a hostile agent can make the search service hold, and what it costs another run.

The service runs as in the runner: in its own process (``workers.search.process``), one fresh
process per phase. Measured: the memory and threads the runner (this process) adds, and the
search process's peak resident memory above what it held when the phase began (sampled every
10 ms from ``/proc``):

- ``honest``: one client, 200 image searches with a 960x1280 JPEG, one after the other;
- ``flood``: 1,500 connections opened and held, then 200 more attempts;
- ``bomb``: 24 threads sending, 10 times each, a small PNG that decodes to 4,800 x 4,800 (23
  megapixels, under the pixel limit: what a bomb that the limit lets through can do).

``neighbour``: an honest run (its own search process; a loop of 20 ms of CPU work, the agent,
then 4 image searches) timed alone and beside a bomb sent at another run's search process by
an attacker held to ``--agent-cpus`` CPUs by a CPU quota (as Docker's ``--cpus`` holds an
agent). Each search process has its quota, ``PODIUM_SEARCH_CPUS``: a host runs as many runs
as it has CPUs for their agents and their searches. The two timings alternate, ``--repeat``
times each.

    PODIUM_SEARCH_CPUS=0.5 python bench/search_attack.py [--agent-cpus 0.5] [--repeat 3]
"""

from __future__ import annotations

import argparse
import base64
import io
import multiprocessing
import os
import socket
import statistics
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evaluator.benchmarks.crag_mm.sample import write_sample
from workers.cpu_quota import CpuQuota
from workers.limits import SearchLimits
from workers.search.engine import SearchEngine
from workers.search.process import SearchProcess

TASK = "single-source-augmentation"  # image search only: the attacks are on images


def _status(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    return 0


def _body(image: Image.Image, fmt: str) -> dict:
    buffer = io.BytesIO()
    image.save(buffer, fmt, **({"quality": 90} if fmt == "JPEG" else {}))
    return {"image_b64": base64.b64encode(buffer.getvalue()).decode(), "k": 5}


def _client(path: Path) -> httpx.Client:
    transport = httpx.HTTPTransport(uds=str(path))
    return httpx.Client(transport=transport, base_url="http://s", timeout=120)


def _honest_body(sample: Path) -> dict:
    photo = next((sample / TASK / "validation" / "images").iterdir())
    return _body(Image.open(photo).convert("RGB"), "JPEG")


BOMB = _body(Image.new("1", (4800, 4800)), "PNG")


def _count(codes: dict[int, int], code: int) -> None:
    codes[code] = codes.get(code, 0) + 1


def _bomb(path: Path, rounds: int, codes: dict[int, int], stop: threading.Event) -> None:
    def attack(_: int) -> None:
        with _client(path) as client:
            for _ in range(rounds):
                if stop.is_set():
                    return
                try:
                    _count(codes, client.post("/search/image", json=BOMB).status_code)
                except httpx.TransportError:
                    _count(codes, 0)  # refused before any HTTP

    with ThreadPoolExecutor(24) as pool:
        list(pool.map(attack, range(24)))


def phase(name: str, spec, work: Path, sample: Path) -> dict:
    honest = _honest_body(sample)
    with SearchProcess(spec) as process, process.serve(work / f"{name}.sock", TASK) as sock:
        with _client(sock.socket_path) as client:
            client.post("/search/image", json=honest)  # encoder and index loaded
        runner_rss, runner_threads = _status(os.getpid(), "VmRSS"), threading.active_count()
        base = peak = _status(process.pid, "VmRSS")
        threads = _status(process.pid, "Threads")
        stop = threading.Event()

        def sample_memory() -> None:
            nonlocal peak, threads
            while not stop.is_set():
                peak = max(peak, _status(process.pid, "VmRSS"))
                threads = max(threads, _status(process.pid, "Threads"))
                time.sleep(0.01)

        sampler = threading.Thread(target=sample_memory, daemon=True)
        sampler.start()
        codes: dict[int, int] = {}
        started = time.perf_counter()
        if name == "honest":
            with _client(sock.socket_path) as client:
                for _ in range(200):
                    _count(codes, client.post("/search/image", json=honest).status_code)
        elif name == "flood":
            held = []
            for _ in range(1500):
                conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                conn.connect(str(sock.socket_path))
                held.append(conn)
            for _ in range(200):
                with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
                    conn.connect(str(sock.socket_path))
                    _count(codes, int(conn.recv(64).split()[1]))
            for conn in held:
                conn.close()
        else:
            _bomb(sock.socket_path, 10, codes, threading.Event())
        elapsed = time.perf_counter() - started
        stop.set()
        sampler.join()
        return {
            "phase": name,
            "codes": codes,
            "runner_added_mib": (_status(os.getpid(), "VmRSS") - runner_rss) / 1024,
            "runner_threads_added": threading.active_count() - runner_threads,
            "search_added_mib": (peak - base) / 1024,
            "search_threads": threads,
            "seconds": elapsed,
        }


def _neighbour_loop(path: str, body: dict, rounds: int, out) -> None:
    """The honest run: 20 ms of the agent's CPU work, then 4 searches; its wall time."""
    with _client(Path(path)) as client:
        started = time.perf_counter()
        for _ in range(rounds):
            until = time.perf_counter() + 0.02
            while time.perf_counter() < until:
                pass
            for _ in range(4):
                assert client.post("/search/image", json=body).status_code == 200
        out.put(time.perf_counter() - started)


def _attacker(path: str, stop, cpus: float) -> None:
    if CpuQuota.apply(os.getpid(), cpus) is None:  # the agent's CPUs, as Docker's --cpus
        raise SystemExit("the bench needs cgroups it can write (root)")
    halt = threading.Event()
    threading.Thread(target=lambda: (stop.wait(), halt.set()), daemon=True).start()
    _bomb(Path(path), 10_000, {}, halt)


def neighbour(spec, work: Path, sample: Path, repeat: int, rounds: int, cpus: float) -> dict:
    body = _honest_body(sample)
    context = multiprocessing.get_context("spawn")
    alone, beside = [], []
    with (
        SearchProcess(spec) as mine,
        SearchProcess(spec) as theirs,
        mine.serve(work / "mine.sock", TASK) as my_sock,
        theirs.serve(work / "theirs.sock", TASK) as their_sock,
    ):
        for sock in (my_sock, their_sock):
            with _client(sock.socket_path) as client:
                client.post("/search/image", json=body)
        for _ in range(repeat):
            for attacked in (False, True):
                stop, out = context.Event(), context.Queue()
                attacker = None
                if attacked:
                    attacker = context.Process(
                        target=_attacker, args=(str(their_sock.socket_path), stop, cpus)
                    )
                    attacker.start()
                    time.sleep(1.0)  # the bomb under way
                honest = context.Process(
                    target=_neighbour_loop, args=(str(my_sock.socket_path), body, rounds, out)
                )
                honest.start()
                seconds = out.get()
                honest.join()
                if attacker is not None:
                    stop.set()
                    attacker.join()
                (beside if attacked else alone).append(seconds)
    return {
        "alone_s": statistics.median(alone),
        "beside_s": statistics.median(beside),
        "alone": alone,
        "beside": beside,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", type=Path)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=50, help="neighbour loop rounds")
    parser.add_argument("--agent-cpus", type=float, default=0.5, help="the attacker's CPUs")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="pbsa-") as work:
        sample = args.sample or Path(work) / "sample"
        if args.sample is None:
            write_sample(sample, seed=0)
        spec = SearchEngine(sample / "corpus", cache_dir=Path(work) / "cache").spec
        limits = SearchLimits.from_environment()
        print(f"{os.cpu_count()} CPUs; each search process: {limits}")
        print(
            "| phase | answers | runner: memory added, threads added | search process: "
            "memory added, threads at most | s |"
        )
        print("| --- | --- | --- | --- | ---: |")
        for name in ("honest", "flood", "bomb"):
            r = phase(name, spec, Path(work), sample)
            print(
                f"| {name} | {r['codes']} | {r['runner_added_mib']:.1f} MiB, "
                f"{r['runner_threads_added']} | {r['search_added_mib']:.1f} MiB, "
                f"{r['search_threads']} | {r['seconds']:.2f} |"
            )
        n = neighbour(spec, Path(work), sample, args.repeat, args.rounds, args.agent_cpus)
        ratio = n["beside_s"] / n["alone_s"]
        print(
            f"\nneighbour ({args.rounds} rounds of 20 ms work + 4 searches): alone "
            f"{n['alone_s']:.2f} s, beside the bomb {n['beside_s']:.2f} s: x{ratio:.3f} "
            f"(alone {[round(s, 2) for s in n['alone']]}, "
            f"beside {[round(s, 2) for s in n['beside']]})"
        )


if __name__ == "__main__":
    main()
