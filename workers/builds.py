"""Building a team's build context: on the build engine, from Podium's base images only.

The build runs on the build engine (``workers.build_engine``), never on the node's engine: a
dockerd of its own whose image store holds the allowed base images and nothing else while the
build runs, with no network for the daemon itself; the built image leaves it as an archive,
loaded by content into the node's engine. So no Dockerfile, however written, can name another
team's image: it is not there. The Dockerfile is still checked first (``workers.dockerfile``):
an early error naming the line, and its base images pinned to image IDs. The build runs without
network (or, where the challenge names a package index, reaching that index only:
``workers.package_index``), without the build cache, under a memory and time limit, and its
image is known by ID only.

Disk: the legacy builder has no quota, so ``_StepWatch`` polls the writable layer of the step
running now (every ``WATCH_S``) and kills a step that has written more than ``max_layer_bytes``
(the build then fails saying so); an image larger than ``max_image_bytes`` in all is refused.
A step can write a little past the limit before the next poll sees it.
"""

from __future__ import annotations

import collections
import concurrent.futures
import dataclasses
import re
import tarfile
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO

import docker
import docker.errors
import requests.exceptions
import urllib3.exceptions

from workers import build_engine
from workers.build_engine import BuildSession
from workers.build_failures import build_failure, plain_lines
from workers.build_notices import notices as _notices
from workers.dockerfile import DockerfileError, pin_base_images
from workers.faults import PodiumFault
from workers.hardening import NO_NETWORK
from workers.images import AgentImage, ImageError, check_tag, copy_tar, full_reference
from workers.package_index import BUILD_ARG_NAMES, Gate, PackageIndex, index_gate

# The base images a Dockerfile may start from, unless a task names others.
DEFAULT_BASE_IMAGES = ("podium/agent-base:py3.11", "podium/agent-base:cuda12")
BUILD_LOG_TAIL_LINES = 40
DEFAULT_MAX_LAYER_BYTES = 10 * 1024**3  # one step's writes: model weights fit
DEFAULT_MAX_IMAGE_BYTES = 30 * 1024**3  # the whole image, base included
WATCH_S = 0.25
_STEP = re.compile(r"---> Running in ([0-9a-f]{12,64})")


def _gib(n: int) -> str:
    return f"{n / 1024**3:.1f} GiB" if n >= 1024**3 else f"{n / 1024**2:.0f} MiB"


class _StepWatch:
    """Kills the running build step once its writable layer passes ``limit`` bytes."""

    def __init__(self, limit: int, api: docker.APIClient) -> None:
        self.limit = limit
        self.api = api  # its own connection: the build's is streaming
        self.step: str | None = None  # the container of the step running now
        self.wrote: int | None = None  # what the killed step had written
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="build-watch", daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        while not self._stop.wait(WATCH_S):
            step = self.step
            if step is None:
                continue
            try:
                reply = self.api.get(
                    self.api._url("/containers/{0}/json", step), params={"size": 1}
                )
                size = reply.json().get("SizeRw") if reply.status_code == 200 else None
                if isinstance(size, int) and size > self.limit:
                    self.api.kill(step)  # raises if the step ended meanwhile: nothing to blame
                    self.wrote = size
                    self.step = None
            except (docker.errors.DockerException, requests.exceptions.RequestException):
                continue  # the step ended meanwhile

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.api.close()


class BaseImageMissing(PodiumFault):
    """An allowed base image is not in this engine: Podium's fault, not the team's."""


def _dockerfile(tar_path: Path) -> str:
    try:
        with tarfile.open(tar_path) as context:
            member = next(
                (m for m in context.getmembers() if m.name.removeprefix("./") == "Dockerfile"),
                None,
            )
            handle = context.extractfile(member) if member is not None else None
            data = handle.read() if handle is not None else None
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise ImageError(f"{tar_path}: not a readable tar archive ({exc})") from None
    if data is None:
        raise ImageError(f"{tar_path}: the build context has no Dockerfile at its top level")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ImageError(f"{tar_path}: the Dockerfile is not UTF-8 text") from None


def _resolver(
    base_images: Sequence[str], client: docker.DockerClient
) -> Callable[[str], str | None]:
    allowed = {full_reference(ref): ref for ref in base_images}

    def resolve(ref: str) -> str | None:
        name = allowed.get(full_reference(ref))
        ids = {}
        if name is None:  # an image ID of an allowed base, written out
            for base in base_images:
                try:
                    ids[client.images.get(base).id] = base
                except docker.errors.ImageNotFound:
                    continue
            image_id = ref if ref.startswith("sha256:") else f"sha256:{ref}"
            return image_id if image_id in ids else None
        try:
            found: str = client.images.get(name).id
            return found
        except docker.errors.ImageNotFound:
            raise BaseImageMissing(f"Podium's base image {name} is not in this engine") from None

    return resolve


def build_context(
    tar_path: str | Path,
    *,
    base_images: Sequence[str] = DEFAULT_BASE_IMAGES,
    tag: str | None = None,
    labels: Mapping[str, str] | None = None,
    timeout_s: float = 1800,
    memory_bytes: int = 8 * 1024**3,
    max_layer_bytes: int = DEFAULT_MAX_LAYER_BYTES,
    max_image_bytes: int = DEFAULT_MAX_IMAGE_BYTES,
    package_index: PackageIndex | None = None,
    client: docker.DockerClient | None = None,
    engine_url: str | None = None,
) -> AgentImage:
    """Build a tarball holding a Dockerfile on the build engine (``engine_url``, else
    ``PODIUM_BUILD_ENGINE``), with no network and within ``timeout_s``; a step may write at
    most ``max_layer_bytes``, the image hold at most ``max_image_bytes``. With a
    ``package_index``, the steps reach that index and nothing else (``workers.package_index``).
    The image ends in ``client``'s engine (the node's), by ID.

    ``tag`` is for Podium's own images and tests; a submission's image is built untagged.
    """
    tar_path = Path(tar_path)
    if not tar_path.is_file():
        raise ImageError(f"{tar_path}: no such file")
    if tag:
        check_tag(tag, str(tar_path))
    client = client or docker.from_env()
    text = _dockerfile(tar_path)
    with build_engine.session(base_images, client, engine_url) as engine:
        try:
            dockerfile = pin_base_images(
                text,
                _resolver(base_images, engine.client),
                BUILD_ARG_NAMES if package_index else (),
                allowed=base_images,
            )
        except DockerfileError as exc:
            raise ImageError(f"{tar_path}: {exc}") from None
        image_id, tail = _built(tar_path, dockerfile, engine, labels, package_index, limits=(
            timeout_s, memory_bytes, max_layer_bytes
        ))  # fmt: skip
        size = engine.client.images.get(image_id).attrs.get("Size") or 0
        if size > max_image_bytes:
            raise ImageError(
                f"{tar_path}: build failed: the image holds {_gib(size)}, more than the "
                f"{_gib(max_image_bytes)} allowed"
            )
        # The image leaves while Podium's check runs in it (each takes a few hundred ms).
        with concurrent.futures.ThreadPoolExecutor(1, "build-hand-over") as mover:
            moved = mover.submit(engine.hand_over, image_id, client, tag)
            notices = _notices(engine.client, image_id)
            image = moved.result()
    return dataclasses.replace(image, build_log="\n".join([*tail, *notices]))


def _built(
    tar_path: Path,
    dockerfile: str,
    engine: BuildSession,
    labels: Mapping[str, str] | None,
    package_index: PackageIndex | None,
    limits: tuple[float, int, int],
) -> tuple[str, list[str]]:
    """The context with its checked Dockerfile, built on ``engine``: the image ID, and the
    last lines of the build's output."""
    with tempfile.TemporaryFile(prefix="podium-build-") as context:
        try:
            copy_tar(tar_path, context, {"Dockerfile": lambda _: dockerfile.encode()})
        except (tarfile.TarError, OSError, EOFError) as exc:
            raise ImageError(f"{tar_path}: not a readable tar archive ({exc})") from None
        if package_index is None:
            return _build(tar_path, context, engine, labels, limits, None, None)
        gate_image = next(iter(engine.bases.values()), None)
        if gate_image is None:
            raise BaseImageMissing("no base image is in this engine for the index gate")
        with index_gate(engine.client, package_index, gate_image) as gate:
            return _build(tar_path, context, engine, labels, limits, gate, package_index)


def _build(
    tar_path: Path,
    context: IO[bytes],
    engine: BuildSession,
    labels: Mapping[str, str] | None,
    limits: tuple[float, int, int],  # timeout_s, memory_bytes, max_layer_bytes
    gate: Gate | None,
    index: PackageIndex | None,
) -> tuple[str, list[str]]:
    """The built image's ID, and the last lines of the build's output (plain text:
    ``workers.build_failures``)."""
    # A private client of the build engine: closing it hangs up on the engine, which cancels
    # the build. The per-read timeout bounds a silent build step; the loop below bounds a
    # chatty one.
    timeout_s, memory_bytes, max_layer_bytes = limits
    api = engine.api()
    tail: collections.deque[str] = collections.deque(maxlen=BUILD_LOG_TAIL_LINES)
    image_id = None
    started = time.monotonic()
    watch = _StepWatch(max_layer_bytes, engine.api())
    try:
        events = api.build(
            fileobj=context,
            custom_context=True,
            labels=dict(labels or {}),
            # the legacy builder takes no more of workers.hardening than the network and the
            # memory: the steps run as the Dockerfile says, held apart by the build engine
            network_mode=gate.network_mode if gate else NO_NETWORK,
            buildargs=gate.build_args if gate else None,
            pull=False,
            nocache=True,
            rm=True,
            forcerm=True,
            decode=True,
            container_limits={"memory": memory_bytes, "memswap": memory_bytes},
            timeout=max(1, int(timeout_s)),
        )
        for event in events:
            if "stream" in event:
                tail.extend(plain_lines(str(event["stream"])))
                if step := _STEP.search(str(event["stream"])):
                    watch.step = step[1]
            if "error" in event:
                why = str(event["error"])
                if watch.wrote is not None:
                    why = (
                        f"a build step wrote {_gib(watch.wrote)}, more than the "
                        f"{_gib(max_layer_bytes)} one step may write; it was stopped"
                    )
                refused = list(dict.fromkeys(gate.proxy.refused)) if gate else []
                raise ImageError(build_failure(tar_path, why, tail, index, refused))
            if isinstance(event.get("aux"), dict) and "ID" in event["aux"]:
                image_id = event["aux"]["ID"]
            if time.monotonic() - started > timeout_s:
                raise ImageError(build_failure(tar_path, f"over {timeout_s:.0f} s", tail))
    except (requests.exceptions.ReadTimeout, urllib3.exceptions.ReadTimeoutError):
        raise ImageError(build_failure(tar_path, f"over {timeout_s:.0f} s", tail)) from None
    except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
        raise ImageError(build_failure(tar_path, str(exc), tail)) from None
    finally:
        watch.close()
        api.close()
    if image_id is None:
        raise ImageError(build_failure(tar_path, "the engine reported no image", tail))
    return image_id, list(tail)
