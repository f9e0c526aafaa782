"""Agent images between nodes, through storage: exported once, loaded by digest where missing.

The node that first makes a submission's image (loads its archive or builds its context)
writes it to Podium's storage as a ``docker save`` archive, ``agent-images/<image ID>.tar``
with its sha256 beside it (``leaderboard.kits.store``: the sidecar is written last, so an
archive without it is not there yet); the build stage does so after handing the run over, so
a run on the same node does not wait for it. Any other node whose engine lacks the image (one
that joins late, or whose engine lost it) takes it from there, waiting up to
``PODIUM_IMAGE_STORE_WAIT_S`` for it to appear: downloaded, its sha256 checked, loaded by
content (``workers.images.load_archive``) and checked to be the recorded image. A node never
asks another node's engine, and never builds an image again once it is stored.

A pulled image's digest is its registry's (``name@sha256:...``): each node pulls that digest
from the registry instead.
"""

from __future__ import annotations

import logging
import tempfile
import time
from pathlib import Path
from typing import IO

import docker
from django.conf import settings

from leaderboard.kits import store
from workers import image_export
from workers.faults import PodiumFault
from workers.images import AgentImage, ImageError, load_archive
from workers.pipeline.bundles import download

logger = logging.getLogger("podium.pipeline")


def _by_content(digest: str) -> bool:
    """Whether ``digest`` is an image ID (a loaded or built image) rather than a registry's."""
    return digest.startswith("sha256:")


def stored(digest: str) -> store.StoredArchive | None:
    """The stored archive of the image ``digest``, if it is complete."""
    return store.stored(image_export.archive_name(digest)) if _by_content(digest) else None


def export(image: AgentImage, client: docker.DockerClient) -> store.StoredArchive | None:
    """Store ``image`` of this engine for the other nodes, once; None for a pulled image."""
    if not _by_content(image.digest):
        return None
    engine_image = image_export.EngineImage(name=image.image_id, image_id=image.image_id)

    def write(out: IO[bytes]) -> None:
        image_export.save(engine_image, out, client)

    archive = store.store_once(image_export.archive_name(image.image_id), write)
    logger.info("image %s stored for the other nodes (%d bytes)", image.image_id, archive.size)
    return archive


def _awaited(digest: str) -> store.StoredArchive | None:
    """The stored archive of ``digest``, waiting up to ``PODIUM_IMAGE_STORE_WAIT_S`` for the
    node that made the image to store it."""
    deadline = time.monotonic() + settings.PODIUM_IMAGE_STORE_WAIT_S
    while (archive := stored(digest)) is None and _by_content(digest):
        if time.monotonic() >= deadline:
            return None
        logger.info("image %s: waiting for its archive in storage", digest)
        time.sleep(min(5.0, max(0.0, deadline - time.monotonic())))
    return archive


def fetch(digest: str, client: docker.DockerClient) -> AgentImage | None:
    """The image ``digest`` loaded into this engine from its stored archive; None when storage
    has none of it (after the wait). A damaged archive is Podium's fault."""
    archive = _awaited(digest)
    if archive is None:
        return None
    with tempfile.TemporaryDirectory(prefix="podium-image-") as scratch:
        path = Path(scratch) / "image.tar"
        download(archive.name, archive.sha256, path, "agent image")
        try:
            image = load_archive(path, client)
        except ImageError as exc:
            raise PodiumFault(f"stored agent image {archive.name}: {exc}") from None
    if image.image_id != digest:
        raise PodiumFault(f"stored agent image {archive.name} loads as {image.image_id}")
    logger.info("image %s loaded from storage (%s, %d bytes)", digest, archive.name, archive.size)
    return image
