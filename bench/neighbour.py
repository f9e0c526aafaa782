"""Another run on the same host, beside an agent that spins on every CPU it is given.

The honest run is ``bench/runtime_overhead.py``'s timed agent (100 ms per 16-turn batch,
sleeping as while a GPU computes, or busy on its CPU) under ``--cpus`` CPUs; the hog is a
container of the agent base image running ``--hog-threads`` spinning threads, held by Docker to
``--cpus`` CPUs as the sandbox holds every agent (a host sized for its runs: on a 2-CPU host,
two runs of 1 CPU). The honest run's batch loop is timed alone and beside the hog, in turn,
``--repeat`` times each; the ratio of the medians is the slowdown (goal: under 1.10).

    python bench/neighbour.py [--turns 512] [--repeat 3] [--cpus 1]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import docker

sys.path.insert(0, str(Path(__file__).resolve().parent))

from runtime_overhead import REPO, TIMED, batch_loop_s, build, make_split

from workers.sandbox import SandboxPolicy

SPIN = "import threading\ndef spin():\n    while True: pass\n" + (
    "threads = [threading.Thread(target=spin) for _ in range({n})]\n"
    "[t.start() for t in threads]\n[t.join() for t in threads]\n"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=512)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cpus", type=float, default=1.0, help="each run's --cpus")
    parser.add_argument("--hog-threads", type=int, default=8)
    args = parser.parse_args()
    client = docker.from_env()
    policy = SandboxPolicy(cpus=args.cpus)
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        images = {
            kind: build(
                REPO / "examples/agents/zero-work",
                f"podium-bench/neighbour-{kind.lower()}:latest",
                {
                    "timed.py": TIMED,
                    "Dockerfile": "FROM podium/agent-base:py3.11\nCOPY . /agent\n"
                    f"ENV PODIUM_AGENT=timed:{kind}Agent\n",
                },
                workdir,
            )
            for kind in ("Sleeping", "Busy")
        }
        split, _ = make_split(workdir / "split", args.turns, (960, 1280))
        loops: dict[tuple[str, bool], list[float]] = {}
        for _ in range(args.repeat):
            for kind, image in images.items():
                for beside in (False, True):
                    hog = None
                    if beside:
                        hog = client.containers.run(
                            "podium/agent-base:py3.11",
                            ["python3", "-c", SPIN.format(n=args.hog_threads)],
                            detach=True,
                            network_mode="none",
                            nano_cpus=int(args.cpus * 1e9),
                            labels={"podium.bench": "neighbour"},
                        )
                        time.sleep(1.0)  # spinning by now
                    try:
                        loop, _, _, _ = batch_loop_s(image, split, policy)
                    finally:
                        if hog is not None:
                            hog.remove(force=True)
                    loops.setdefault((kind, beside), []).append(loop)
        print(
            f"{args.turns} turns of 960x1280 photos, each run --cpus {args.cpus}, "
            f"hog: {args.hog_threads} spinning threads"
        )
        for kind in images:
            alone = statistics.median(loops[(kind, False)])
            beside = statistics.median(loops[(kind, True)])
            print(
                f"{kind.lower()} agent: batch loop alone {alone:.3f} s, beside the hog "
                f"{beside:.3f} s: x{beside / alone:.3f} (alone "
                f"{[round(v, 3) for v in loops[(kind, False)]]}, beside "
                f"{[round(v, 3) for v in loops[(kind, True)]]})"
            )
    for image in images.values():
        client.images.remove(image.image_id, force=True)


if __name__ == "__main__":
    main()
