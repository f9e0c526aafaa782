"""Building a team's build context: only from Podium's base images, with nothing shared.

The Dockerfile is checked and its base images pinned to image IDs before the engine sees it
(``workers.dockerfile``); the build runs without network, without the build cache (no layer of
another team's build is reused, nor can its existence be probed), under a memory and time limit,
and its image is known by ID only: no tag another team could name in a ``FROM``.
"""

from __future__ import annotations

import collections
import tarfile
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import docker
import docker.errors
import requests.exceptions
import urllib3.exceptions

from workers.dockerfile import DockerfileError, pin_base_images
from workers.images import AgentImage, ImageError, agent_image, check_tag, copy_tar, full_reference

# The base images a Dockerfile may start from, unless a task names others.
DEFAULT_BASE_IMAGES = ("podium/agent-base:py3.11", "podium/agent-base:cuda12")
BUILD_LOG_TAIL_LINES = 40


class BaseImageMissing(Exception):
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
    client: docker.DockerClient | None = None,
) -> AgentImage:
    """Build a tarball holding a Dockerfile, with no network and within ``timeout_s``.

    ``tag`` is for Podium's own images and tests; a submission's image is built untagged.
    """
    tar_path = Path(tar_path)
    if not tar_path.is_file():
        raise ImageError(f"{tar_path}: no such file")
    if tag:
        check_tag(tag, str(tar_path))
    client = client or docker.from_env()
    try:
        dockerfile = pin_base_images(_dockerfile(tar_path), _resolver(base_images, client))
    except DockerfileError as exc:
        raise ImageError(f"{tar_path}: {exc}") from None
    with tempfile.TemporaryFile(prefix="podium-build-") as context:
        try:
            copy_tar(tar_path, context, {"Dockerfile": lambda _: dockerfile.encode()})
        except (tarfile.TarError, OSError, EOFError) as exc:
            raise ImageError(f"{tar_path}: not a readable tar archive ({exc})") from None
        image_id = _build(tar_path, context, tag, labels, timeout_s, memory_bytes)
    return agent_image(client.images.get(image_id), tag)


def _build(tar_path, context, tag, labels, timeout_s: float, memory_bytes: int) -> str:
    # A private client (same engine settings, from the environment): closing it hangs up on the
    # engine, which cancels the build. The per-read timeout bounds a silent build step; the
    # loop below bounds a chatty one.
    api = docker.from_env().api
    tail: collections.deque[str] = collections.deque(maxlen=BUILD_LOG_TAIL_LINES)
    image_id = None
    started = time.monotonic()
    try:
        events = api.build(
            fileobj=context,
            custom_context=True,
            tag=tag,
            labels=dict(labels or {}),
            network_mode="none",
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
            if "error" in event:
                raise ImageError(_build_failure(tar_path, str(event["error"]), tail))
            if isinstance(event.get("aux"), dict) and "ID" in event["aux"]:
                image_id = event["aux"]["ID"]
            if time.monotonic() - started > timeout_s:
                raise ImageError(_build_failure(tar_path, f"over {timeout_s:.0f} s", tail))
    except (requests.exceptions.ReadTimeout, urllib3.exceptions.ReadTimeoutError):
        raise ImageError(_build_failure(tar_path, f"over {timeout_s:.0f} s", tail)) from None
    except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
        raise ImageError(_build_failure(tar_path, str(exc), tail)) from None
    finally:
        api.close()
    if image_id is None:
        raise ImageError(_build_failure(tar_path, "the engine reported no image", tail))
    return image_id


def _build_failure(tar_path: Path, why: str, tail: collections.deque[str]) -> str:
    log = "\n".join(tail) or "(empty)"
    return f"{tar_path}: build failed: {why.strip()}\n--- last lines of the build log ---\n{log}"
