"""Building a team's build context: only from Podium's base images, with nothing shared.

The Dockerfile is checked and its base images pinned to image IDs before the engine sees it
(``workers.dockerfile``); the build runs without network (or, where the challenge names a
package index, reaching that index only: ``workers.package_index``), without the build cache
(no layer of another team's build is reused, nor can its existence be probed), under a memory
and time limit, and its image is known by ID only: no tag another team could name in a ``FROM``.

Disk: the legacy builder has no quota, so ``_StepWatch`` polls the writable layer of the step
running now (every ``WATCH_S``) and kills a step that has written more than ``max_layer_bytes``
(the build then fails saying so); an image larger than ``max_image_bytes`` in all is removed and
refused. A step can write a little past the limit before the next poll sees it.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import re
import tarfile
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO

import docker
import docker.errors
import requests.exceptions
import urllib3.exceptions
from docker.types import LogConfig

from workers.dockerfile import DockerfileError, pin_base_images
from workers.faults import PodiumFault
from workers.images import AgentImage, ImageError, agent_image, check_tag, copy_tar, full_reference
from workers.package_index import BUILD_ARG_NAMES, Gate, PackageIndex, index_gate

# The base images a Dockerfile may start from, unless a task names others.
DEFAULT_BASE_IMAGES = ("podium/agent-base:py3.11", "podium/agent-base:cuda12")
BUILD_LOG_TAIL_LINES = 40
DEFAULT_MAX_LAYER_BYTES = 10 * 1024**3  # one step's writes: model weights fit
DEFAULT_MAX_IMAGE_BYTES = 30 * 1024**3  # the whole image, base included
WATCH_S = 0.25
_STEP = re.compile(r"---> Running in ([0-9a-f]{12,64})")
NOTICE_CHECK_S = 30
NOTICE_LINES, NOTICE_BYTES = 5, 4096  # what is read of the check's output, at most
# Run in the built image: any cragmm_search it installs besides Podium's stand-in.
_FIND_SEARCH = (
    "from agentkit.server import replaced_search_packages as r; print(*r()[:5], sep='\\n')"
)


def _gib(n: int) -> str:
    return f"{n / 1024**3:.1f} GiB" if n >= 1024**3 else f"{n / 1024**2:.0f} MiB"


class _StepWatch:
    """Kills the running build step once its writable layer passes ``limit`` bytes."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.api = docker.from_env().api  # its own connection: the build's is streaming
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


def _resolver(base_images: Sequence[str], client: docker.DockerClient):
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
            return client.images.get(name).id
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
) -> AgentImage:
    """Build a tarball holding a Dockerfile, with no network and within ``timeout_s``; a step
    may write at most ``max_layer_bytes``, the image hold at most ``max_image_bytes``. With a
    ``package_index``, the steps reach that index and nothing else (``workers.package_index``).

    ``tag`` is for Podium's own images and tests; a submission's image is built untagged.
    """
    tar_path = Path(tar_path)
    if not tar_path.is_file():
        raise ImageError(f"{tar_path}: no such file")
    if tag:
        check_tag(tag, str(tar_path))
    client = client or docker.from_env()
    try:
        dockerfile = pin_base_images(
            _dockerfile(tar_path),
            _resolver(base_images, client),
            BUILD_ARG_NAMES if package_index else (),
        )
    except DockerfileError as exc:
        raise ImageError(f"{tar_path}: {exc}") from None
    with tempfile.TemporaryFile(prefix="podium-build-") as context:
        try:
            copy_tar(tar_path, context, {"Dockerfile": lambda _: dockerfile.encode()})
        except (tarfile.TarError, OSError, EOFError) as exc:
            raise ImageError(f"{tar_path}: not a readable tar archive ({exc})") from None
        limits = (timeout_s, memory_bytes, max_layer_bytes)
        if package_index is None:
            image_id, tail = _build(tar_path, context, tag, labels, limits, None)
        else:
            with index_gate(client, package_index, base_images[0]) as gate:
                image_id, tail = _build(tar_path, context, tag, labels, limits, gate)
    image = client.images.get(image_id)
    size = image.attrs.get("Size") or 0
    if size > max_image_bytes:
        client.images.remove(image_id, force=True)
        raise ImageError(
            f"{tar_path}: build failed: the image holds {_gib(size)}, more than the "
            f"{_gib(max_image_bytes)} allowed"
        )
    log = "\n".join([*tail, *_notices(client, image_id)])
    return dataclasses.replace(agent_image(image, tag), build_log=log)


def _notices(client: docker.DockerClient, image_id: str) -> list[str]:
    """Podium's notices on a built image: an official ``cragmm_search`` it installs, which
    Podium's stand-in replaces. Run in the image with no network, for at most
    ``NOTICE_CHECK_S``; an image whose Python does not answer gets no notice."""
    try:
        container = client.containers.run(
            image_id,
            ["-c", _FIND_SEARCH],
            entrypoint="python3",
            detach=True,
            network_mode="none",
            user="10001:10001",
            read_only=True,
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            mem_limit="512m",
            pids_limit=64,
            environment={"HOME": "/tmp"},
            # the team's Python may print anything: Docker keeps at most this much of it
            log_config=LogConfig(type="json-file", config={"max-size": "64k", "max-file": "1"}),
        )
    except docker.errors.DockerException:
        return []
    try:
        container.wait(timeout=NOTICE_CHECK_S)
        output = container.logs(stdout=True, stderr=False, tail=NOTICE_LINES)
        found = output[:NOTICE_BYTES].decode(errors="replace").splitlines()[:NOTICE_LINES]
    except (docker.errors.DockerException, requests.exceptions.RequestException):
        found = []
    finally:
        with contextlib.suppress(docker.errors.DockerException):
            container.remove(force=True)
    return [
        f"podium: this image installs its own cragmm_search ({path[:200]}); Podium's "
        "stand-in (its search client) is imported instead"
        for path in found
        if path.strip()
    ]


def _build(
    tar_path: Path,
    context: IO[bytes],
    tag: str | None,
    labels: Mapping[str, str] | None,
    limits: tuple[float, int, int],  # timeout_s, memory_bytes, max_layer_bytes
    gate: Gate | None,
) -> tuple[str, list[str]]:
    """The built image's ID, and the last lines of the build's output."""
    # A private client (same engine settings, from the environment): closing it hangs up on the
    # engine, which cancels the build. The per-read timeout bounds a silent build step; the
    # loop below bounds a chatty one.
    timeout_s, memory_bytes, max_layer_bytes = limits
    api = docker.from_env().api
    tail: collections.deque[str] = collections.deque(maxlen=BUILD_LOG_TAIL_LINES)
    image_id = None
    started = time.monotonic()
    watch = _StepWatch(max_layer_bytes)
    try:
        events = api.build(
            fileobj=context,
            custom_context=True,
            tag=tag,
            labels=dict(labels or {}),
            network_mode=gate.network_mode if gate else "none",
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
                tail.extend(str(event["stream"]).rstrip("\n").splitlines())
                if step := _STEP.search(str(event["stream"])):
                    watch.step = step[1]
            if "error" in event:
                why = str(event["error"])
                if watch.wrote is not None:
                    why = (
                        f"a build step wrote {_gib(watch.wrote)}, more than the "
                        f"{_gib(max_layer_bytes)} one step may write; it was stopped"
                    )
                if gate is not None and gate.proxy.refused:
                    why += (
                        f" (the build asked for {', '.join(dict.fromkeys(gate.proxy.refused))}: "
                        "builds reach the challenge's package index and no other host)"
                    )
                raise ImageError(_build_failure(tar_path, why, tail))
            if isinstance(event.get("aux"), dict) and "ID" in event["aux"]:
                image_id = event["aux"]["ID"]
            if time.monotonic() - started > timeout_s:
                raise ImageError(_build_failure(tar_path, f"over {timeout_s:.0f} s", tail))
    except (requests.exceptions.ReadTimeout, urllib3.exceptions.ReadTimeoutError):
        raise ImageError(_build_failure(tar_path, f"over {timeout_s:.0f} s", tail)) from None
    except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
        raise ImageError(_build_failure(tar_path, str(exc), tail)) from None
    finally:
        watch.close()
        api.close()
    if image_id is None:
        raise ImageError(_build_failure(tar_path, "the engine reported no image", tail))
    return image_id, list(tail)


def _build_failure(tar_path: Path, why: str, tail: collections.deque[str]) -> str:
    log = "\n".join(tail) or "(empty)"
    return f"{tar_path}: build failed: {why.strip()}\n--- last lines of the build log ---\n{log}"
