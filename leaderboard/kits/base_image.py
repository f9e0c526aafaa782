"""The agent base image as a download: a ``docker save`` archive of one of the challenge's
allowed base images (``PODIUM_BUILD_BASE_IMAGES``), made by this machine's Docker engine once
per image ID and kept in storage as ``agent-images/<image id>.tar``; a rebuilt image (a new ID)
is saved again. Teams ``docker load`` it and build ``FROM`` it as Podium does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import IO

from django.conf import settings

from leaderboard.kits import store
from leaderboard.kits.contents import archive_filename
from workers import image_export
from workers.image_export import EngineUnavailable, ImageMissing

__all__ = [
    "BaseImageError",
    "BaseImageRow",
    "EngineUnavailable",
    "ImageMissing",
    "base_image_archive",
    "unavailable_reason",
]


class BaseImageError(Exception):
    """A name that is not one of the allowed base images."""


@dataclass(frozen=True)
class BaseImageArchive:
    image: str
    image_id: str
    archive: store.StoredArchive

    @property
    def filename(self) -> str:
        return archive_filename(self.image)


def allowed(name: str | None) -> str:
    """``name`` if it is an allowed base image; the first one when not given."""
    images = list(settings.PODIUM_BUILD_BASE_IMAGES)
    if not name:
        return images[0]
    if name not in images:
        raise BaseImageError(f"{name!r} is not a base image here (one of: {', '.join(images)})")
    return name


def unavailable_reason(exc: EngineUnavailable | ImageMissing) -> str:
    """What a participant reads when the archive cannot be made (fixed words; the engine's
    own message goes to the log)."""
    if isinstance(exc, EngineUnavailable):
        return (
            "The agent base image cannot be downloaded now: no Docker engine answers on "
            "Podium's web server. Try again later, or tell the organisers."
        )
    return (
        "The agent base image cannot be downloaded now: it is not built on Podium's web "
        "server yet (deploy/agent-base/build.sh). Tell the organisers."
    )


def _storage_name(found: image_export.EngineImage) -> str:
    return image_export.archive_name(found.image_id)


def base_image_archive(name: str | None = None) -> BaseImageArchive:
    """The saved archive of the base image ``name`` (the first allowed by default), saved now
    when this image ID has none. Raises ``BaseImageError``, ``ImageMissing`` (the engine lacks
    it: an operator builds it with deploy/agent-base/build.sh) or ``EngineUnavailable``."""
    image = allowed(name)
    found = image_export.find(image)

    def write(out: IO[bytes]) -> None:
        image_export.save(found, out)

    archive = store.store_once(_storage_name(found), write)
    return BaseImageArchive(image=image, image_id=found.image_id, archive=archive)


@dataclass(frozen=True)
class BaseImageRow:
    """An allowed base image as the kit page lists it: its saved archive (None until the first
    download), and whether there is anything to download (``missing``: the engine has no image
    of that name; ``engine_down``: no engine answered)."""

    image: str
    saved: store.StoredArchive | None = None
    missing: bool = False
    engine_down: bool = False

    @property
    def downloadable(self) -> bool:
        return not (self.missing or self.engine_down)


def saved_base_images() -> list[BaseImageRow]:
    """Each allowed base image with its saved archive when the engine's current image of that
    name has one, or why it cannot be downloaded."""
    rows: list[BaseImageRow] = []
    for image in settings.PODIUM_BUILD_BASE_IMAGES:
        try:
            found = image_export.find(image)
        except EngineUnavailable:
            rows.append(BaseImageRow(image, engine_down=True))
            continue
        except ImageMissing:
            rows.append(BaseImageRow(image, missing=True))
            continue
        rows.append(BaseImageRow(image, store.stored(_storage_name(found))))
    return rows
