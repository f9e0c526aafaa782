"""Getting a participant's agent image into the local Docker engine, pinned by digest.

Three sources, one result: ``load_archive`` (a ``docker save`` tarball, loaded by content),
``workers.builds.build_context`` (a tarball holding a Dockerfile, built without network under
a time limit) and ``pull`` (a registry reference). Each returns an ``AgentImage`` whose
``image_id`` is the content-addressed ``sha256:`` image ID that runs are pinned to.
"""

from __future__ import annotations

import io
import json
import posixpath
import tarfile
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import docker
import docker.errors

from evaluator.archives import forget_members
from workers.faults import TeamFault

# Podium's own images (and its names for submissions) live under these repositories on Docker
# Hub's default domain; a submission may never name one of them, however it spells it.
RESERVED_PREFIXES = ("podium/", "podium-submission/")
# The names Docker Hub answers to: Docker treats a reference under any of them as docker.io.
_HUB_DOMAINS = ("docker.io", "index.docker.io", "registry-1.docker.io")
# OCI name annotations: a tag, in a docker save archive's index.json.
_OCI_NAME_KEYS = ("io.containerd.image.name", "org.opencontainers.image.ref.name")


class ImageError(TeamFault):
    """The submission could not become a runnable image; the message says why."""


@dataclass(frozen=True)
class AgentImage:
    ref: str  # the tag when there is one, else the image ID
    image_id: str  # "sha256:...", content-addressed: what runs use
    repo_digests: tuple[str, ...] = ()
    build_log: str = ""  # a built image's: the last lines of its build, and Podium's notices

    @property
    def digest(self) -> str:
        """The digest recorded with a run: the registry digest when known, else the image ID."""
        return self.repo_digests[0] if self.repo_digests else self.image_id


def local_image(ref: str, client: docker.DockerClient | None = None) -> AgentImage:
    """An image already in the local engine, by tag or ID."""
    client = client or docker.from_env()
    try:
        return agent_image(client.images.get(ref))
    except docker.errors.ImageNotFound:
        raise ImageError(f"{ref}: no such image in the local Docker engine") from None


def agent_image(image: docker.models.images.Image, wanted: str | None = None) -> AgentImage:
    """``wanted``: the tag the submission named, when the image also has others."""
    tags = image.tags
    return AgentImage(
        ref=wanted if wanted is not None and wanted in tags else (tags[0] if tags else image.id),
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


def full_reference(ref: str) -> str:
    """``ref`` as Docker normalises it, with its tag (``latest`` when none) or digest."""
    ref = ref.strip()
    name, at, digest = ref.partition("@")
    tag = name[name.rfind(":") + 1 :] if name.rfind(":") > name.rfind("/") else "latest"
    return f"{normalized_name(ref)}@{digest}" if at else f"{normalized_name(ref)}:{tag}"


def is_reserved(ref: str) -> bool:
    """Whether ``ref``, once Docker has normalised it, names one of Podium's own images."""
    name = normalized_name(ref)
    return any(name.startswith(f"docker.io/{prefix}") for prefix in RESERVED_PREFIXES)


def check_tag(tag: str, source: str) -> None:
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


def _no_repo_tags(data: bytes) -> bytes:
    """``manifest.json`` of a docker save archive, naming no tag."""
    document = json.loads(data)
    for entry in document:
        entry["RepoTags"] = None
    return json.dumps(document).encode()


def _no_ref_names(data: bytes) -> bytes:
    """``index.json`` (OCI layout) of a docker save archive, naming no tag."""
    document = json.loads(data)
    for entry in document.get("manifests") or []:
        for key in _OCI_NAME_KEYS:
            (entry.get("annotations") or {}).pop(key, None)
    return json.dumps(document).encode()


# What loading an archive must not see: every place a docker save archive names a tag.
_UNTAGGED: dict[str, Callable[[bytes], bytes | None]] = {
    "manifest.json": _no_repo_tags,
    "index.json": _no_ref_names,
    "repositories": lambda _: None,  # the legacy format's tags
}


def copy_tar(
    path: Path, out: IO[bytes], edit: Mapping[str, Callable[[bytes], bytes | None]]
) -> None:
    """``path`` (a tar, plain or compressed) copied to ``out`` uncompressed, each top-level file
    named in ``edit`` replaced by ``edit[name](content)``, or left out where that is None."""
    with tarfile.open(path, mode="r|*") as source, tarfile.open(fileobj=out, mode="w|") as copy:
        for member in source:
            forget_members(source)
            data = source.extractfile(member) if member.isfile() else None
            name = posixpath.normpath(member.name)
            if data is not None and name in edit:
                content = edit[name](data.read())
                if content is None:
                    continue
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
        check_tag(tag, str(path))
    client = client or docker.from_env()
    try:
        with tempfile.TemporaryFile(prefix="podium-load-") as untagged:
            copy_tar(path, untagged, _UNTAGGED)
            images = client.images.load(untagged)
    except (tarfile.TarError, OSError, EOFError, ValueError, AttributeError, TypeError) as exc:
        raise ImageError(f"{path}: not a readable docker save archive ({exc})") from None
    except docker.errors.DockerException as exc:
        raise ImageError(f"{path}: the Docker engine refused the archive: {exc}") from None
    if len(images) != 1:
        raise ImageError(f"{path}: loading produced {len(images)} images; submit exactly one")
    image = client.images.get(images[0].id)
    return AgentImage(image.id, image.id, tuple(image.attrs.get("RepoDigests") or ()))


def pull(ref: str, client: docker.DockerClient | None = None) -> AgentImage:
    """Pull a registry reference (``name:tag`` or ``name@sha256:...``)."""
    if not ref or any(c.isspace() for c in ref):
        raise ImageError(f"{ref!r}: not an image reference")
    check_tag(ref, ref)
    client = client or docker.from_env()
    try:
        image = client.images.pull(ref)  # no tag means "latest", as with docker pull
    except docker.errors.DockerException as exc:
        raise ImageError(f"{ref}: pull failed: {exc}") from None
    return agent_image(client.images.get(image.id), ref)
