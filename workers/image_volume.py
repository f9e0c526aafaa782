"""The image directory of one agent container start: the runner writes it, the agent reads it.

Turns carry their image as a file path (``image_path``) instead of base64 in the JSON body.
The directory is a tmpfs docker volume (``SandboxPolicy.create_image_volume``) mounted
read-only at ``IMAGE_DIR`` in the container; the runner writes through the volume's host
``Mountpoint``. Before each batch is sent, :meth:`ImageVolume.stage` makes the directory hold
exactly that batch's images: files the batch does not use are removed first, then the missing
ones are written, named ``<sha256 of the file><suffix>``, so a conversation's image is written
once and reused by its later turns. Nothing else from the split is ever there: no image of a
turn not being asked, never any ground truth.

The volume is sized by :func:`volume_bytes` for the largest batch the split can make, so it
cannot overflow while only the runner writes; it could only fill up if the agent kept removed
files open (their space is freed when the last descriptor closes): :class:`ImageDirFull`.
"""

from __future__ import annotations

import errno
import hashlib
import heapq
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from agentkit.protocol import IMAGE_DIR

PAGE_BYTES = 4096  # tmpfs allocates whole pages
MARGIN_BYTES = 256 * 1024  # directory entries and inodes
SUFFIX = re.compile(r"\.[a-z0-9]{1,8}")


class ImageDirFull(Exception):
    """The image directory has no room for a batch's images; the message says why."""


@dataclass(frozen=True)
class ImageFile:
    """An image file's content and its name in the image directory."""

    name: str
    data: bytes


def read_image(path: Path) -> ImageFile:
    """Read ``path`` and name it by its content: ``<sha256><suffix>`` (suffix lower-cased)."""
    data = path.read_bytes()
    suffix = path.suffix.lower()
    name = hashlib.sha256(data).hexdigest() + (suffix if SUFFIX.fullmatch(suffix) else "")
    return ImageFile(name, data)


def volume_bytes(image_paths: Iterable[Path], batch_size: int) -> int:
    """The size of an image directory that holds any ``batch_size`` of these images at once:
    the largest ones, each rounded up to whole pages, plus a margin."""
    sizes = (path.stat().st_size for path in set(image_paths))
    largest = heapq.nlargest(batch_size, sizes)
    return sum(-(-size // PAGE_BYTES) * PAGE_BYTES for size in largest) + MARGIN_BYTES


class ImageVolume:
    """The image directory at ``host_dir`` (the volume's Mountpoint) as the runner keeps it."""

    def __init__(self, host_dir: Path) -> None:
        self.host_dir = host_dir
        self.present: set[str] = set()  # names written and not removed; only the runner writes

    def stage(self, images: Sequence[ImageFile | None]) -> list[str | None]:
        """Make the directory hold exactly ``images``; their paths inside the container, in
        order (None for a turn without an image)."""
        wanted = {image.name: image for image in images if image is not None}
        for name in self.present - wanted.keys():
            (self.host_dir / name).unlink(missing_ok=True)
            self.present.discard(name)
        for name, image in wanted.items():
            if name not in self.present:
                self._write(name, image.data)
                self.present.add(name)
        return [None if image is None else f"{IMAGE_DIR}/{image.name}" for image in images]

    def _write(self, name: str, data: bytes) -> None:
        path = self.host_dir / name
        try:
            # O_EXCL: never through a planted link. Plain os calls: this is on every batch's path.
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o444)
            try:
                os.fchmod(fd, 0o444)  # whatever the umask: the agent's uid must read it
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
            finally:
                os.close(fd)
        except OSError as exc:
            path.unlink(missing_ok=True)
            if exc.errno in (errno.ENOSPC, errno.EDQUOT):
                raise ImageDirFull(
                    f"the image directory is full ({len(self.present)} images in it, "
                    f"{len(data)} bytes to write): the agent keeps removed images open"
                ) from None
            raise
