"""Agent images between nodes, through storage: exported when asked, or ahead when no run is timed.

A node whose engine has a submission's image (the one whose build stage loaded or built it, or
found it there) owes its archive (``offer``: an ``ImageArchive`` row, pending, naming the node);
the node's exporter (``leaderboard.pipeline.node``) writes it to Podium's storage as a ``docker
save`` archive, ``agent-images/<image ID>.tar`` with its sha256 beside it
(``leaderboard.kits.store``: the sidecar is written last, so an archive without it is not there
yet). When it does so (``export_owed``), by ``PODIUM_IMAGE_STORE``:

- ``auto``: at once when another node waits for the image (``wanted_at``, set by ``fetch``);
  otherwise only while another node serves the GPU queues (one node alone never needs the
  archive) and no agent is timed on this node nor waits for one of its GPU workers: the export
  (dockerd's copy of every layer, then our sha256 and upload) never shares the CPUs with an
  agent being timed (``leaderboard.pipeline.node.ahead_now``);
- ``always``: every image at once, beside a timed run if there is one (the archive is there
  even if this node is lost during the image's first run);
- ``never``: none; a node lacking an image makes it itself, without waiting.

Any other node whose engine lacks the image (one that joins late, or whose engine lost it) takes
it from there, waiting up to ``PODIUM_IMAGE_STORE_WAIT_S`` while a node owes it: downloaded, its
sha256 checked, loaded by content (``workers.images.load_archive``) and checked to be the
recorded image. When nobody owes it (swept by ``leaderboard.image_retention``, or never stored)
it does not wait: the build stage's path makes it again. A node never asks another node's
engine.

A pulled image's digest is its registry's (``name@sha256:...``): each node pulls that digest
from the registry instead.
"""

from __future__ import annotations

import logging
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO

import docker
from django.conf import settings
from django.utils import timezone

from leaderboard.kits import store
from leaderboard.models import ImageArchive
from leaderboard.pipeline.bundles import download
from workers import image_export
from workers.faults import PodiumFault
from workers.images import AgentImage, ImageError, load_archive

logger = logging.getLogger("podium.pipeline")
Owed = ImageArchive.State
POLL_S = 2.0  # how often a waiting node looks for the archive


def _by_content(digest: str) -> bool:
    """Whether ``digest`` is an image ID (a loaded or built image) rather than a registry's."""
    return digest.startswith("sha256:")


def stored(digest: str) -> store.StoredArchive | None:
    """The stored archive of the image ``digest``, if it is complete."""
    return store.stored(image_export.archive_name(digest)) if _by_content(digest) else None


def offer(image: AgentImage) -> None:
    """This node's engine has ``image``: it owes the archive unless the archive is stored or
    another node owes it already (nothing in ``never`` mode, nor for a pulled image). Only the
    database is asked: a run whose image is here starts while storage is unreachable."""
    if settings.PODIUM_IMAGE_STORE == "never" or not _by_content(image.digest):
        return
    node = settings.PODIUM_NODE_ID
    record, created = ImageArchive.objects.get_or_create(
        image_id=image.image_id, defaults={"node": node}
    )
    if created or record.state != Owed.GONE:
        return
    # swept: this node stores it again (a sweep holding the record's row meanwhile makes it
    # gone first; another node owing it already is left as it is)
    ImageArchive.objects.filter(pk=record.pk).exclude(state=Owed.PENDING).update(
        state=Owed.PENDING, node=node
    )
    logger.info("image %s: not in storage any more; node %s owes it again", image.image_id, node)


def export(image_id: str, client: docker.DockerClient) -> store.StoredArchive:
    """The image ``image_id`` of this engine stored (once) and recorded as stored;
    ``image_export.ImageMissing`` when the engine lacks it."""
    engine_image = image_export.EngineImage(name=image_id, image_id=image_id)

    def write(out: IO[bytes]) -> None:
        image_export.save(engine_image, out, client)

    started = time.monotonic()
    archive = store.store_once(image_export.archive_name(image_id), write)
    now = timezone.now()  # the grace before the sweep may remove it starts again
    changes = {"state": Owed.STORED, "node": "", "wanted_at": None, "size": archive.size}
    records = ImageArchive.objects.filter(image_id=image_id)
    if not records.exclude(state=Owed.STORED).update(**changes, stored_at=now):
        defaults = {**changes, "stored_at": now}
        ImageArchive.objects.get_or_create(image_id=image_id, defaults=defaults)
    logger.info(
        "image %s stored for the other nodes (%d bytes, %.1f s)",
        image_id, archive.size, time.monotonic() - started,
    )  # fmt: skip
    return archive


def export_owed(client: docker.DockerClient, *, ahead: Callable[[], bool]) -> list[str]:
    """One pass of this node's exporter: the archives it owes that another node waits for,
    then the others, one at a time while ``ahead()`` says so (asked before each). Returns the
    image IDs stored."""
    owed = ImageArchive.objects.filter(node=settings.PODIUM_NODE_ID, state=Owed.PENDING)
    wanted = owed.exclude(wanted_at=None).order_by("wanted_at", "pk")
    done = [i for i in wanted.values_list("image_id", flat=True) if _exported(i, client)]
    # each export moves its record out of pending (stored, or gone when the engine lost it)
    while (record := owed.filter(wanted_at=None).order_by("pk").first()) is not None and ahead():
        if _exported(record.image_id, client):
            done.append(record.image_id)
    return done


def _exported(image_id: str, client: docker.DockerClient) -> bool:
    """``image_id`` stored; False (and nobody owes it any more) when this engine lost it."""
    try:
        export(image_id, client)
    except image_export.ImageMissing:
        ImageArchive.objects.filter(image_id=image_id, state=Owed.PENDING).update(
            state=Owed.GONE, node=""
        )
        logger.warning("image %s: owed by this node, but its engine lost it", image_id)
        return False
    return True


def _owed(digest: str) -> bool:
    """Whether some node will store ``digest``'s archive (and, if one owes it, that node is
    told another waits for it). An image with no record was made before records were kept:
    its node stored it right after making it."""
    record = ImageArchive.objects.filter(image_id=digest).first()
    if record is None or record.state == Owed.STORED:  # STORED: storage is being read again
        return True
    if record.state == Owed.GONE:
        return False
    ImageArchive.objects.filter(pk=record.pk, wanted_at=None).update(wanted_at=timezone.now())
    return True


def _awaited(digest: str) -> store.StoredArchive | None:
    """The stored archive of ``digest``, waiting up to ``PODIUM_IMAGE_STORE_WAIT_S`` while a
    node owes it; None at once when none does."""
    deadline = time.monotonic() + settings.PODIUM_IMAGE_STORE_WAIT_S
    while (archive := stored(digest)) is None and _by_content(digest):
        if time.monotonic() >= deadline or not _owed(digest):
            return None
        logger.info("image %s: waiting for its archive in storage", digest)
        time.sleep(min(POLL_S, max(0.0, deadline - time.monotonic())))
    return archive


def fetch(digest: str, client: docker.DockerClient) -> AgentImage | None:
    """The image ``digest`` loaded into this engine from its stored archive; None when storage
    has none of it (after the wait, if a node owes it; at once in ``never`` mode). A damaged
    archive is Podium's fault."""
    if settings.PODIUM_IMAGE_STORE == "never":
        return None
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
