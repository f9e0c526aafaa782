"""What a hostile agent can make the search service hold, against an honest agent, in one run.

The service runs in this process, as it does in the runner; its peak resident memory (sampled
every 10 ms) and thread count are measured over three phases, each in a fresh process so that
one phase's heap does not hide another's:

- ``honest``: one client, 200 image searches with a 960x1280 JPEG, one after the other;
- ``flood``: 1,500 connections opened and held, then 200 more attempts;
- ``bomb``: 24 threads sending, 10 times each, a small PNG that decodes to 4,800 x 4,800 (23
  megapixels, under the pixel limit: what a bomb that the limit lets through can do).

    python bench/search_attack.py [--sample DIR]
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import resource
import socket
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evaluator.sample import write_sample
from workers.search.encoders import image_encoder, text_encoder
from workers.search.engine import SearchEngine
from workers.search.service import start_search_service

TASK = "multi-source-augmentation"


def _rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def phase(name: str, sample: Path, work: Path) -> dict:
    engine = SearchEngine(
        sample / "corpus",
        text_encoder=text_encoder("minilm"),
        image_encoder=image_encoder("colour"),
        cache_dir=work,
    )
    engine.prepare(TASK)
    photo = next((sample / TASK / "validation" / "images").iterdir())
    buffer = io.BytesIO()
    Image.open(photo).convert("RGB").save(buffer, "JPEG", quality=90)
    honest = {"image_b64": base64.b64encode(buffer.getvalue()).decode(), "k": 5}
    buffer = io.BytesIO()
    Image.new("1", (4800, 4800)).save(buffer, "PNG")
    bomb = {"image_b64": base64.b64encode(buffer.getvalue()).decode(), "k": 5}
    peak, threads, stop = [_rss_mib()], [threading.active_count()], threading.Event()
    baseline = peak[0]

    def sample_memory() -> None:
        while not stop.is_set():
            peak[0] = max(peak[0], _rss_mib())
            threads[0] = max(threads[0], threading.active_count())
            time.sleep(0.01)

    with start_search_service(engine, work / f"{name}.sock", TASK) as service:
        sampler = threading.Thread(target=sample_memory, daemon=True)
        sampler.start()

        def client() -> httpx.Client:
            transport = httpx.HTTPTransport(uds=str(service.socket_path))
            return httpx.Client(transport=transport, base_url="http://s", timeout=60)

        statuses: dict[int, int] = {}
        started = time.perf_counter()
        if name == "honest":
            with client() as c:
                for _ in range(200):
                    code = c.post("/search/image", json=honest).status_code
                    statuses[code] = statuses.get(code, 0) + 1
        elif name == "flood":
            held = []
            for _ in range(1500):
                conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                conn.connect(str(service.socket_path))
                held.append(conn)
            for _ in range(200):
                with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
                    conn.connect(str(service.socket_path))
                    code = int(conn.recv(64).split()[1])
                statuses[code] = statuses.get(code, 0) + 1
            for conn in held:
                conn.close()
        else:

            def attack(_: int) -> list[int]:
                codes = []
                with client() as c:
                    for _ in range(10):
                        try:
                            codes.append(c.post("/search/image", json=bomb).status_code)
                        except httpx.TransportError:
                            codes.append(0)  # refused before any HTTP
                return codes

            with ThreadPoolExecutor(24) as pool:
                for codes in pool.map(attack, range(24)):
                    for code in codes:
                        statuses[code] = statuses.get(code, 0) + 1
        elapsed = time.perf_counter() - started
        stop.set()
        sampler.join()
    return {
        "phase": name,
        "baseline_mib": round(baseline, 1),
        "peak_mib": round(peak[0], 1),
        "added_mib": round(peak[0] - baseline, 1),
        "max_threads": threads[0],
        "seconds": round(elapsed, 2),
        "statuses": statuses,
        "max_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", type=Path)
    parser.add_argument("--phase", choices=("honest", "flood", "bomb"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="pbsa-") as work:
        sample = args.sample or Path(work) / "sample"
        if args.sample is None:
            write_sample(sample, seed=0)
        if args.phase:
            print(json.dumps(phase(args.phase, sample, Path(work))))
            return
        print("| phase | requests answered | added resident memory (MiB) | threads at most | s |")
        print("| --- | --- | ---: | ---: | ---: |")
        for name in ("honest", "flood", "bomb"):
            command = [sys.executable, __file__, "--phase", name, "--sample", str(sample)]
            result = json.loads(subprocess.run(command, capture_output=True, check=True).stdout)
            print(
                f"| {name} | {result['statuses']} | {result['added_mib']} "
                f"| {result['max_threads']} | {result['seconds']} |"
            )


if __name__ == "__main__":
    main()
