"""What building on the build engine costs: the demo's builds, side by side with another tree's.

Each round builds the demo's example agents (``examples/agents/*``: ``FROM`` the agent base,
``COPY`` the agent, ``ENV``) through ``workers.builds.build_context`` as the build stage calls
it (with ``--stage``, each after the build stage's check of the stored upload), once with this
tree and once with ``--against`` (a checkout of an earlier commit, e.g. a ``git worktree`` of
the commit before the build engine, whose builds run on the node's engine), in turn, each tree
in a process of its own. Every built image is removed from the node's engine afterwards. It
prints each tree's median seconds per build over the rounds and their ratio; then, for this
tree, what the first build after the build engine lost its base images costs (the base copied
in once) against the builds after it.

    python bench/build_isolation.py --against ../podium-before [--rounds 5] [--stage]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
EXAMPLES = REPO / "examples" / "agents"
BASE = "podium/agent-base:py3.11"

# Run in the tree under test: build every context given, print the seconds of each, as JSON.
# With --stage, each build is preceded by the build stage's check of the stored upload.
_BUILD = """
import json, os, sys, time, docker
from pathlib import Path
from workers.builds import build_context
BASE = "podium/agent-base:py3.11"
stage = os.environ.get("BENCH_STAGE") == "1"
if stage:
    import django
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "podium.settings")
    django.setup()
    from leaderboard.submitting.artifacts import check_stored_archive
client = docker.from_env()
times = []
for path in sys.argv[1:]:
    started = time.perf_counter()
    if stage:
        check_stored_archive(Path(path), "build-context", "your upload")
    image = build_context(path, base_images=[BASE], timeout_s=300, client=client)
    times.append(time.perf_counter() - started)
    client.images.remove(image.image_id, force=True)
print(json.dumps(times))
"""


def contexts(folder: Path) -> list[str]:
    paths = []
    for agent in sorted(p for p in EXAMPLES.iterdir() if (p / "Dockerfile").is_file()):
        path = folder / f"{agent.name}.tar"
        with tarfile.open(path, "w") as tar:
            for item in sorted(agent.iterdir()):
                tar.add(item, arcname=item.name)
        paths.append(str(path))
    return paths


def build(tree: Path, paths: list[str], stage: bool = False) -> list[float]:
    env = {**os.environ, "PYTHONPATH": str(tree), "BENCH_STAGE": "1" if stage else "0"}
    done = subprocess.run(
        [sys.executable, "-c", _BUILD, *paths],
        cwd=tree, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"{tree}: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def first_build_after_losing_bases(paths: list[str]) -> tuple[float, list[float]]:
    import docker

    from workers.build_engine import configured_url

    engine = docker.DockerClient(base_url=configured_url())
    for image_id in engine.api.images(all=True, quiet=True):
        engine.api.remove_image(image_id, force=True)
    engine.close()
    times = build(REPO, paths[:3])
    return times[0], times[1:]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", type=Path, required=True, help="the other tree")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--stage", action="store_true", help="time the build stage's upload check with each build"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="podium-bench-") as folder:
        paths = contexts(Path(folder))
        build(REPO, paths[:1])  # the base in the build engine, as after the first build
        trees = {"this tree": REPO, str(args.against): args.against.resolve()}
        seconds: dict[str, list[float]] = {name: [] for name in trees}
        for number in range(args.rounds):
            for name, tree in trees.items():
                times = build(tree, paths, args.stage)
                seconds[name].extend(times)
                print(f"round {number + 1} {name}: {statistics.median(times):.3f} s per build")
        medians = {name: statistics.median(times) for name, times in seconds.items()}
        for name, median in medians.items():
            spread = f"{min(seconds[name]):.3f}-{max(seconds[name]):.3f}"
            count = len(seconds[name])
            print(f"{name}: median {median:.3f} s per build ({spread}, {count} builds)")
        mine, theirs = medians["this tree"], medians[str(args.against)]
        print(f"this tree / {args.against}: {mine / theirs:.3f}")
        first, later = first_build_after_losing_bases(paths)
        print(f"first build after the build engine lost its bases: {first:.3f} s; "
              f"the next ones: {', '.join(f'{t:.3f}' for t in later)} s")  # fmt: skip
        print(f"load average: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
