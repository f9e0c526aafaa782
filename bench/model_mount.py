"""Agent start to ready when the agent loads its model's weights by hub id: a model mounted
from the node's model store (``workers.model_store``) against the same weights baked into the
image, and an agent that loads nothing.

A model directory of ``--gib`` GiB (one ``model.safetensors`` of random bytes and a config) is
registered in a temporary store as ``bench/model``; the agent resolves it as the Hugging Face
cache does (``$HF_HOME/hub/models--bench--model/refs/main`` -> snapshot) and reads every byte
before it reports ready, as a weight loader does. Each variant starts ``--starts`` containers
through the runner's own ``AgentContainer`` (same sandbox, same readiness polling); the page
cache is dropped before each start with ``--cold`` (root only), else it is warm after the first.

    python bench/model_mount.py [--gib 2] [--starts 3] [--cold]
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import tarfile
import tempfile
import time
from pathlib import Path

import docker

from workers.agent_container import AgentContainer
from workers.model_store import register, stored
from workers.sandbox import SandboxPolicy

BASE_IMAGE = "podium/agent-base:py3.11"
HUB_ID = "bench/model"
AGENT = """
import os, time
from pathlib import Path


def weights_folder():
    baked = Path("/agent/weights")
    if baked.is_dir():
        return baked
    root = Path(os.environ["HF_HOME"]) / "hub" / "models--bench--model"
    if not root.is_dir():
        return None
    return root / "snapshots" / (root / "refs" / "main").read_text().strip()


class Agent:
    def __init__(self, search_pipeline=None):
        started, total, folder = time.perf_counter(), 0, weights_folder()
        if folder is not None:
            for path in sorted(folder.iterdir()):
                with open(path, "rb", buffering=0) as stream:
                    while chunk := stream.read(16 << 20):
                        total += len(chunk)
        print(f"loaded {total} bytes in {time.perf_counter() - started:.3f} s", flush=True)

    def get_batch_size(self):
        return 1

    def batch_generate_response(self, queries, images, message_histories):
        return ["ok" for _ in queries]
"""


def _image(client: docker.DockerClient, weights: Path | None) -> str:
    context = io.BytesIO()
    with tarfile.open(fileobj=context, mode="w") as tar:
        dockerfile = f"FROM {BASE_IMAGE}\nCOPY agent.py /agent/agent.py\n"
        if weights is not None:
            dockerfile += "COPY weights /agent/weights\n"
            tar.add(weights, arcname="weights")
        dockerfile += "ENV PODIUM_AGENT=agent:Agent\n"
        for name, text in (("Dockerfile", dockerfile), ("agent.py", AGENT)):
            info = tarfile.TarInfo(name)
            info.size = len(text.encode())
            tar.addfile(info, io.BytesIO(text.encode()))
    context.seek(0)
    image, _ = client.images.build(fileobj=context, custom_context=True, rm=True)
    return image.id


def _drop_caches() -> None:
    os.sync()
    Path("/proc/sys/vm/drop_caches").write_text("3\n")


def _start(client, image_id: str, policy: SandboxPolicy, cold: bool) -> tuple[float, str]:
    if cold:
        _drop_caches()
    started = time.monotonic()
    with AgentContainer(client, image_id, "bench", policy, image_dir_bytes=1 << 20) as agent:
        agent.wait_ready(started + 600)
        ready_s = time.monotonic() - started
        logs = agent.container.logs().decode()
    loaded = next((line for line in logs.splitlines() if line.startswith("loaded ")), "")
    return ready_s, loaded


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gib", type=float, default=2.0, help="model size (GiB)")
    parser.add_argument("--starts", type=int, default=3)
    parser.add_argument("--cold", action="store_true", help="drop the page cache before starts")
    args = parser.parse_args()
    client = docker.from_env()
    with tempfile.TemporaryDirectory(prefix="podium-bench-model-") as tmp:
        source = Path(tmp) / "model"
        source.mkdir()
        (source / "config.json").write_text('{"model_type": "bench"}\n')
        with (source / "model.safetensors").open("wb") as out:
            for _ in range(int(args.gib * 1024 / 64)):
                out.write(os.urandom(64 << 20))
        store = Path(tmp) / "store"
        register(store, HUB_ID, source)
        mounted = SandboxPolicy(models=(stored(store, HUB_ID),))
        built = time.monotonic()
        plain = _image(client, None)
        baked = _image(client, source)
        print(f"image with the weights baked in built in {time.monotonic() - built:.1f} s")
        variants = {
            "no model loaded": (plain, SandboxPolicy()),
            "model mounted from the store": (plain, mounted),
            "model baked into the image": (baked, SandboxPolicy()),
        }
        print(f"model: {args.gib:g} GiB; page cache {'dropped' if args.cold else 'warm'}")
        for name, (image_id, policy) in variants.items():
            times = []
            for _ in range(args.starts):
                ready_s, loaded = _start(client, image_id, policy, args.cold)
                times.append(ready_s)
            print(
                f"{name:30s} start to ready: median {statistics.median(times):.2f} s "
                f"(min {min(times):.2f}, max {max(times):.2f}); last: {loaded}"
            )
        client.images.remove(baked, force=True)


if __name__ == "__main__":
    main()
