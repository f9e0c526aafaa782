"""How long Podium's agent base image takes to build and how big it is.

Runs ``deploy/agent-base/build.sh`` with ``FORCE=1`` (the image is built again) and times it;
with ``--fresh`` the cached debootstrap root file system and the imported OS image go first,
so the first build on a new machine is what is timed. Then prints the image's size and that of
its OS image, and how long the image's Python takes to import what agents use (agentkit, Pillow,
numpy) in a container with no network.

    python bench/agent_base.py [--fresh] [--tag podium/agent-base:py3.11]
    python bench/agent_base.py --flavour cuda   # podium/agent-base:cuda12 (wheels cached)
"""

from __future__ import annotations

import argparse
import os
import subprocess
import time
from pathlib import Path

import docker

REPO = Path(__file__).resolve().parents[1]
IMPORTS = (
    "import time; t = time.perf_counter(); import agentkit.server, PIL.Image, numpy; "
    "print(f'{time.perf_counter() - t:.3f}')"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fresh", action="store_true", help="debootstrap again (first build)")
    parser.add_argument("--flavour", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--tag", help="default: podium/agent-base:py3.11, or :cuda12")
    args = parser.parse_args()
    args.tag = args.tag or f"podium/agent-base:{'cuda12' if args.flavour == 'cuda' else 'py3.11'}"
    client = docker.from_env()
    if args.fresh:
        cache = Path(os.environ.get("PODIUM_ROOTFS_CACHE", Path.home() / ".cache/podium"))
        for tarball in cache.glob("debian-bookworm-minbase-python3-*.tar"):
            tarball.unlink()
        for image in client.images.list(name="podium/debian-python"):
            for tag in image.tags:
                client.images.remove(tag)
    started = time.monotonic()
    subprocess.run(
        ["bash", str(REPO / "deploy/agent-base/build.sh"), args.flavour],
        env={**os.environ, "FORCE": "1", "AGENT_BASE_IMAGE": args.tag},
        check=True,
        capture_output=True,
    )
    built_s = time.monotonic() - started
    image = client.images.get(args.tag)
    os_image = client.images.get(image.attrs["Config"]["Labels"].get("org.podium.os.image", ""))
    imports = client.containers.run(
        args.tag, ["-c", IMPORTS], entrypoint="python3", network_mode="none", remove=True
    ).decode()
    print(f"build ({'fresh' if args.fresh else 'rootfs cached'}): {built_s:.1f} s")
    print(f"{args.tag}: {image.attrs['Size'] / 1e6:.0f} MB")
    print(f"{os_image.tags[0]}: {os_image.attrs['Size'] / 1e6:.0f} MB")
    print(f"import agentkit.server, PIL.Image, numpy: {float(imports):.3f} s")


if __name__ == "__main__":
    main()
