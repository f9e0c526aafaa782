"""Getting a participant's agent image into the local Docker engine, pinned by digest.

Three sources, one result: ``load_archive`` (a ``docker save`` tarball, streamed from disk),
``build_context`` (a tarball holding a Dockerfile, built without network under a time limit)
and ``pull`` (a registry reference). Each returns an ``AgentImage`` whose ``image_id`` is the
content-addressed ``sha256:`` image ID that runs are pinned to.
"""

from __future__ import annotations

import collections
import io
import json
import posixpath
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import docker
import docker.errors
import requests.exceptions
import urllib3.exceptions

# Podium's own images (and its names for submissions) live under these repositories on Docker
# Hub's default domain; a submission may never name one of them, however it spells it.
RESERVED_PREFIXES = ("podium/", "podium-submission/")
# The names Docker Hub answers to: Docker treats a reference under any of them as docker.io.
_HUB_DOMAINS = ("docker.io", "index.docker.io", "registry-1.docker.io")
# What in a docker save archive names a tag: the legacy file, and OCI name annotations.
_LEGACY_TAGS = "repositories"
_OCI_NAME_KEYS = ("io.containerd.image.name", "org.opencontainers.image.ref.name")
BUILD_LOG_TAIL_LINES = 40


class ImageError(Exception):
    """The submission could not become a runnable image; the message says why."""


@dataclass(frozen=True)
class AgentImage:
    ref: str  # the tag when there is one, else the image ID
    image_id: str  # "sha256:...", content-addressed: what runs use
    repo_digests: tuple[str, ...] = ()

    @property
    def digest(self) -> str:
        """The digest recorded with a run: the registry digest when known, else the image ID."""
        return self.repo_digests[0] if self.repo_digests else self.image_id


def local_image(ref: str, client: docker.DockerClient | None = None) -> AgentImage:
    """An image already in the local engine, by tag or ID."""
    client = client or docker.from_env()
    try:
        return _agent_image(client.images.get(ref))
    except docker.errors.ImageNotFound:
        raise ImageError(f"{ref}: no such image in the local Docker engine") from None


def _agent_image(image: docker.models.images.Image, wanted: str | None = None) -> AgentImage:
    """``wanted``: the tag the submission named, when the image also has others."""
    tags = image.tags
    return AgentImage(
        ref=wanted if wanted in tags else (tags[0] if tags else image.id),
        image_id=image.id,
        repo_digests=tuple(image.attrs.get("RepoDigests") or ()),
    )


def normalized_name(ref: str) -> str:
    """The repository of ``ref`` as Docker normalises it: ``x`` -> ``docker.io/library/x``,
    ``index.docker.io/a/b:1`` -> ``docker.io/a/b`` (tag and digest dropped)."""
    name = ref.strip().split("@", 1)[0]
    if name.rfind(":") > name.rfind("/"):
        name = name[: name.rfind(":")]
    first, slash, rest = name.partition("/")
    if slash and ("." in first or ":" in first or first == "localhost"):
        domain, path = first.lower(), rest
    else:
        domain, path = "docker.io", name
    if domain in _HUB_DOMAINS:
        domain = "docker.io"
        if "/" not in path:
            path = f"library/{path}"
    return f"{domain}/{path}"


def is_reserved(ref: str) -> bool:
    """Whether ``ref``, once Docker has normalised it, names one of Podium's own images."""
    name = normalized_name(ref)
    return any(name.startswith(f"docker.io/{prefix}") for prefix in RESERVED_PREFIXES)


def _check_tag(tag: str, source: str) -> None:
    if is_reserved(tag):
        raise ImageError(f"{source}: the name {tag!r} is reserved for Podium's own images")


def _archive_tags(path: Path) -> list[str]:
    """The repository tags a ``docker save`` archive would create, read from its manifest."""
    try:
        with tarfile.open(path) as archive:
            member = archive.getmember("manifest.json")
            handle = archive.extractfile(member)
            manifest = json.load(handle) if handle else None
    except KeyError:
        raise ImageError(f"{path}: not a docker save archive (no manifest.json)") from None
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise ImageError(f"{path}: not a readable tar archive ({exc})") from None
    except ValueError as exc:
        raise ImageError(f"{path}: manifest.json is not valid JSON ({exc})") from None
    if not isinstance(manifest, list) or not manifest:
        raise ImageError(f"{path}: manifest.json lists no image")
    if len(manifest) != 1:
        raise ImageError(f"{path}: the archive holds {len(manifest)} images; submit exactly one")
    tags = (manifest[0].get("RepoTags") or []) if isinstance(manifest[0], dict) else None
    if not isinstance(tags, list):
        raise ImageError(f"{path}: manifest.json entry is malformed")
    return [str(t) for t in tags]


def _untagged(name: str, data: bytes) -> bytes:
    """``manifest.json`` or ``index.json`` of a docker save archive, with no name of a tag."""
    document = json.loads(data)
    if name == "manifest.json":
        for entry in document:
            entry["RepoTags"] = None
    else:
        for entry in document.get("manifests") or []:
            for key in _OCI_NAME_KEYS:
                (entry.get("annotations") or {}).pop(key, None)
    return json.dumps(document).encode()


def _copy_untagged(path: Path, out: IO[bytes]) -> None:
    """``path`` copied to ``out`` (uncompressed) so that loading it tags nothing."""
    with tarfile.open(path, mode="r|*") as source, tarfile.open(fileobj=out, mode="w|") as copy:
        for member in source:
            source.members.clear()
            name = posixpath.normpath(member.name)
            if name == _LEGACY_TAGS:
                continue
            data = source.extractfile(member) if member.isfile() else None
            if data is not None and name in ("manifest.json", "index.json"):
                content = _untagged(name, data.read())
                member.size, data = len(content), io.BytesIO(content)
            copy.addfile(member, data)
    out.seek(0)


def load_archive(path: str | Path, client: docker.DockerClient | None = None) -> AgentImage:
    """Load a ``docker save`` tarball (plain or compressed) by content: whatever tags the
    archive names, none is created or moved in the engine; the image is known by its ID."""
    path = Path(path)
    if not path.is_file():
        raise ImageError(f"{path}: no such file")
    for tag in _archive_tags(path):
        _check_tag(tag, str(path))
    client = client or docker.from_env()
    try:
        with tempfile.TemporaryFile(prefix="podium-load-") as untagged:
            _copy_untagged(path, untagged)
            images = client.images.load(untagged)
    except (tarfile.TarError, OSError, EOFError, ValueError, AttributeError, TypeError) as exc:
        raise ImageError(f"{path}: not a readable docker save archive ({exc})") from None
    except docker.errors.DockerException as exc:
        raise ImageError(f"{path}: the Docker engine refused the archive: {exc}") from None
    if len(images) != 1:
        raise ImageError(f"{path}: loading produced {len(images)} images; submit exactly one")
    image = client.images.get(images[0].id)
    return AgentImage(image.id, image.id, tuple(image.attrs.get("RepoDigests") or ()))


def build_context(
    tar_path: str | Path,
    *,
    tag: str | None = None,
    timeout_s: float = 1800,
    memory_bytes: int = 8 * 1024**3,
    client: docker.DockerClient | None = None,
) -> AgentImage:
    """Build a tarball holding a Dockerfile, with no network and within ``timeout_s``."""
    tar_path = Path(tar_path)
    if not tar_path.is_file():
        raise ImageError(f"{tar_path}: no such file")
    if tag:
        _check_tag(tag, str(tar_path))
    try:
        with tarfile.open(tar_path) as context:
            names = {m.name.removeprefix("./") for m in context.getmembers()}
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise ImageError(f"{tar_path}: not a readable tar archive ({exc})") from None
    if "Dockerfile" not in names:
        raise ImageError(f"{tar_path}: the build context has no Dockerfile at its top level")
    # A private client (same engine settings, from the environment): closing it hangs up on the
    # engine, which cancels the build. The per-read timeout bounds a silent build step; the
    # loop below bounds a chatty one.
    api = docker.from_env().api
    tail: collections.deque[str] = collections.deque(maxlen=BUILD_LOG_TAIL_LINES)
    image_id = None
    started = time.monotonic()
    try:
        with tar_path.open("rb") as stream:
            events = api.build(
                fileobj=stream,
                custom_context=True,
                tag=tag,
                network_mode="none",
                pull=False,
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
    return _agent_image((client or docker.from_env()).images.get(image_id), tag)


def _build_failure(tar_path: Path, why: str, tail: collections.deque[str]) -> str:
    log = "\n".join(tail) or "(empty)"
    return f"{tar_path}: build failed: {why.strip()}\n--- last lines of the build log ---\n{log}"


def pull(ref: str, client: docker.DockerClient | None = None) -> AgentImage:
    """Pull a registry reference (``name:tag`` or ``name@sha256:...``)."""
    if not ref or any(c.isspace() for c in ref):
        raise ImageError(f"{ref!r}: not an image reference")
    _check_tag(ref, ref)
    client = client or docker.from_env()
    try:
        image = client.images.pull(ref)  # no tag means "latest", as with docker pull
    except docker.errors.DockerException as exc:
        raise ImageError(f"{ref}: pull failed: {exc}") from None
    return _agent_image(client.images.get(image.id), ref)
