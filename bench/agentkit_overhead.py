"""What agentkit itself costs per batch, and what lazy image decoding saves.

Starts ``python -m agentkit`` on the host (a real Unix socket) twice, side by side:

- ``lazy``: the zero-work example agent (``examples/agents/zero-work``), which never touches the
  pixels, so agentkit never decodes them;
- ``eager``: the same agent, but it calls ``image.load()`` on every image, which is what a server
  that decoded images up front would pay on every batch.

Each batch holds ``--batch-size`` turns with a 960x1280 JPEG (the size of CRAG-MM's egocentric
photos), sent as Podium's runner sends them: an ``image_path`` to a file (on a tmpfs, as the
image volume is). ``lazy-b64`` is the lazy agent sent the same photos inline (``image_b64``,
what a client without a shared directory uses). Also times the search client's image encoding:
the original bytes of an undecoded image versus re-encoding a decoded one.

    python bench/agentkit_overhead.py --batches 50
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from PIL import Image
from tqdm import tqdm

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from agentkit.image_open import open_image  # noqa: E402
from agentkit.search import encode_image  # noqa: E402
from tests.agentkit.conftest import UnixHTTPConnection  # noqa: E402

EAGER_AGENT = """
from agent import ZeroWorkAgent

class EagerAgent(ZeroWorkAgent):
    def batch_generate_response(self, queries, images, message_histories):
        for image in images:
            image.load()
        return super().batch_generate_response(queries, images, message_histories)
"""


def photo(seed: int) -> bytes:
    """A 960x1280 JPEG with enough detail to cost a realistic decode."""
    rng = random.Random(seed)
    image = Image.effect_noise((960, 1280), 40).convert("RGB")
    tint = Image.new("RGB", image.size, tuple(rng.randrange(256) for _ in range(3)))
    buffer = io.BytesIO()
    Image.blend(image, tint, 0.5).save(buffer, "JPEG", quality=90)
    return buffer.getvalue()


def png(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", compress_level=1)
    return base64.b64encode(buffer.getvalue())


def batch_body(images: list[Path], batch_size: int, number: int, inline: bool) -> bytes:
    """One batch; each turn's photo as a file path (as Podium sends it), or inline."""
    turns = []
    for i in range(batch_size):
        image = images[(number * batch_size + i) % len(images)]
        turns.append(
            {
                "session_id": f"s{number}-{i}",
                "interaction_id": f"i{number}-{i}",
                "turn_idx": 0,
                "query": "What is the brand of this vehicle?",
                **(
                    {"image_b64": base64.b64encode(image.read_bytes()).decode()}
                    if inline
                    else {"image_path": str(image)}
                ),
                "message_history": [],
                "rag_context": None,
                "domain": None,
            }
        )
    return json.dumps({"batch_id": number, "deadline_s": 160.0, "turns": turns}).encode()


def start(spec: str, workdir: Path, socket_dir: Path) -> subprocess.Popen:
    env = {
        **os.environ,
        "PODIUM_AGENT": spec,
        "PODIUM_SOCKET_DIR": str(socket_dir),
        "PYTHONPATH": f"{workdir}{os.pathsep}{REPO}",
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "agentkit"], cwd=workdir, env=env, stdout=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with socket.socket(socket.AF_UNIX) as probe:
                probe.connect(str(socket_dir / "agent.sock"))
            status, _ = post(socket_dir, "GET", "/ready", None)
            if status == 200:
                return process
        except OSError:
            pass
        time.sleep(0.05)
    process.kill()
    raise SystemExit(f"{spec} did not become ready")


def post(socket_dir: Path, method: str, path: str, body: bytes | None) -> tuple[int, bytes]:
    connection = UnixHTTPConnection(socket_dir / "agent.sock", timeout=120)
    try:
        connection.request(method, path, body=body)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def time_batches(socket_dir: Path, bodies: list[bytes]) -> list[float]:
    timings = []
    for body in tqdm(bodies, desc=socket_dir.name, leave=False):
        started = time.perf_counter()
        status, answer = post(socket_dir, "POST", "/batch", body)
        timings.append(time.perf_counter() - started)
        if status != 200:
            raise SystemExit(f"batch failed: HTTP {status} {answer[:200]!r}")
    return timings


def summary(timings: list[float]) -> str:
    ordered = sorted(timings)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    return f"median {statistics.median(timings) * 1e3:.1f} ms, p95 {p95 * 1e3:.1f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batches", type=int, default=50)
    parser.add_argument("--batch-size", type=int, default=16)
    args = parser.parse_args()
    photos = [photo(seed) for seed in range(4)]
    mean_kib = statistics.mean(len(p) for p in photos) / 1024
    print(f"{args.batches} batches of {args.batch_size} turns, 960x1280 JPEG ~{mean_kib:.0f} KiB")
    shm = Path("/dev/shm") if Path("/dev/shm").is_dir() else None
    with (
        tempfile.TemporaryDirectory() as tmp,
        tempfile.TemporaryDirectory(dir=shm, prefix="podium-bench-") as image_dir,
    ):
        # One file per turn of a batch, as the runner writes a batch's images.
        images = []
        for i in range(args.batch_size):
            path = Path(image_dir) / f"{i}.jpg"
            path.write_bytes(photos[i % len(photos)])
            images.append(path)
        bodies = {
            inline: [batch_body(images, args.batch_size, n, inline) for n in range(args.batches)]
            for inline in (False, True)
        }
        workdir = Path(tmp) / "agent"
        workdir.mkdir()
        source = REPO / "examples/agents/zero-work/agent.py"
        (workdir / "agent.py").write_text(source.read_text())
        (workdir / "eager.py").write_text(EAGER_AGENT)
        results = {}
        runs = (
            ("lazy", "agent:ZeroWorkAgent", False),
            ("eager", "eager:EagerAgent", False),
            ("lazy-b64", "agent:ZeroWorkAgent", True),
        )
        for name, spec, inline in runs:
            socket_dir = Path(tmp) / name
            socket_dir.mkdir()
            process = start(spec, workdir, socket_dir)
            try:
                time_batches(socket_dir, bodies[inline][:3])  # warm-up
                results[name] = time_batches(socket_dir, bodies[inline])
            finally:
                process.terminate()
                process.wait(10)
    for name, timings in results.items():
        per_turn = statistics.median(timings) / args.batch_size * 1e3
        print(f"{name:6} per batch: {summary(timings)}; per turn {per_turn:.2f} ms")
    ratio = statistics.median(results["eager"]) / statistics.median(results["lazy"])
    print(f"eager / lazy (median per batch): {ratio:.1f}x")
    inline = statistics.median(results["lazy-b64"]) / statistics.median(results["lazy"])
    print(f"lazy, inline base64 / image files (median per batch): {inline:.1f}x")

    undecoded = [open_image(p) for p in photos]
    decoded = [open_image(p) for p in photos]
    for image in decoded:
        image.load()
    encoders = {
        "original bytes (undecoded)": (encode_image, undecoded),
        "BMP (decoded)": (encode_image, decoded),
        "PNG level 1 (decoded)": (png, decoded),
    }
    timing = {}
    for name, (encode, given) in encoders.items():
        started = time.perf_counter()
        for _ in range(5):
            for image in given:
                encode(image)
        timing[name] = (time.perf_counter() - started) / (5 * len(given))
        print(f"search client image encoding, {name}: {timing[name] * 1e3:.2f} ms per image")
    bmp, png_time = timing["BMP (decoded)"], timing["PNG level 1 (decoded)"]
    print(f"PNG / BMP: {png_time / bmp:.0f}x")


if __name__ == "__main__":
    main()
