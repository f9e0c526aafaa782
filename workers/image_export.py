"""An image of the local Docker engine written out as a ``docker save`` archive, as a stream.

What the starter kit's base image download is made of (``leaderboard/kits/base_image.py``), and
how an agent image reaches the other nodes (``leaderboard/pipeline/image_store.py``):
``find`` names the image's content-addressed ID (what the saved archive is keyed by), ``save``
writes the archive chunk by chunk into a binary file and returns its sha256; nothing is held
whole in memory.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import IO

import docker
import docker.errors
import requests.exceptions

from workers.faults import TransientFault

# What ``image.save`` yields at a time: the engine's stream read in 1 MiB pieces.
CHUNK = 1024 * 1024


class EngineUnavailable(TransientFault):
    """No Docker engine answers; the message says so in the operator's words."""


class ImageMissing(Exception):
    """The engine does not have the image."""


@dataclass(frozen=True)
class EngineImage:
    name: str  # as asked, e.g. podium/agent-base:py3.11
    image_id: str  # sha256:...


def archive_name(image_id: str) -> str:
    """Where the saved archive of the image ``image_id`` is kept in Podium's storage (base
    images for the starter kit and agent images for the other nodes alike)."""
    return f"agent-images/{image_id.removeprefix('sha256:')}.tar"


def _client() -> docker.DockerClient:
    try:
        client = docker.from_env()
        client.ping()
    except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
        raise EngineUnavailable(f"no Docker engine is reachable here ({exc})") from None
    return client


def find(name: str) -> EngineImage:
    """The engine's image named ``name``; ``ImageMissing`` when it has none."""
    client = _client()
    try:
        image = client.images.get(name)
    except docker.errors.ImageNotFound:
        raise ImageMissing(f"{name}: the Docker engine has no such image") from None
    except (docker.errors.APIError, requests.exceptions.RequestException) as exc:
        raise EngineUnavailable(f"the Docker engine did not answer for {name} ({exc})") from None
    return EngineImage(name=name, image_id=image.id)


def save(image: EngineImage, out: IO[bytes], client: docker.DockerClient | None = None) -> str:
    """Write ``image`` (by its ID, so a tag moved meanwhile changes nothing) to ``out`` as
    ``docker save`` does, tagged with its name so ``docker load`` restores the tag; returns the
    archive's sha256. ``client``: that engine's (the local one by default)."""
    client = client or _client()
    digest = hashlib.sha256()
    try:
        found = client.images.get(image.image_id)
        # named=True: the archive's manifest carries the tag (the name asked, if the image has it)
        tagged = image.name if image.name in found.tags else True
        for chunk in found.save(chunk_size=CHUNK, named=tagged):
            digest.update(chunk)
            out.write(chunk)
    except docker.errors.ImageNotFound:
        raise ImageMissing(f"{image.name}: the image {image.image_id} is gone") from None
    except (docker.errors.APIError, requests.exceptions.RequestException) as exc:
        raise EngineUnavailable(f"saving {image.name} failed ({exc})") from None
    return digest.hexdigest()
