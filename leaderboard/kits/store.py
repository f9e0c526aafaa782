"""Archives Podium makes once and keeps in its storage (local files or S3): starter kits and
saved base images. Each is stored under its name with a sidecar ``<name>.sha256`` holding its
sha256 and size, written last: an archive without its sidecar is not there yet.

``store_once`` makes an archive at most once per name on a machine (a file lock under
``PODIUM_VAR_DIR/locks``: a second request for the same archive waits for the first and then
finds it); archives are written to a temporary file first, never held in memory.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from django.conf import settings
from django.core.files import File
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage

_CHUNK = 1024 * 1024


@dataclass(frozen=True)
class StoredArchive:
    name: str  # in the default storage
    sha256: str
    size: int

    def open(self) -> IO[bytes]:
        return default_storage.open(self.name, "rb")


def _sidecar(name: str) -> str:
    return f"{name}.sha256"


def stored(name: str) -> StoredArchive | None:
    """The archive stored under ``name``, if it is complete."""
    sidecar = _sidecar(name)
    if not default_storage.exists(sidecar):
        return None
    with default_storage.open(sidecar, "rb") as handle:
        sha256, _, size = handle.read().decode("ascii").strip().partition(" ")
    return StoredArchive(name=name, sha256=sha256, size=int(size))


@contextlib.contextmanager
def _lock(name: str) -> Iterator[None]:
    locks = Path(settings.VAR_DIR) / "locks"
    locks.mkdir(parents=True, exist_ok=True)
    path = locks / f"{hashlib.sha256(name.encode()).hexdigest()[:32]}.lock"
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def store_once(name: str, write: Callable[[IO[bytes]], None]) -> StoredArchive:
    """The archive ``name``: the stored one, else ``write(out)`` makes it and it is stored."""
    if (found := stored(name)) is not None:
        return found
    with _lock(name):
        if (found := stored(name)) is not None:  # made while this request waited
            return found
        with tempfile.TemporaryFile(dir=settings.FILE_UPLOAD_TEMP_DIR) as out:
            write(out)
            size = out.tell()
            out.seek(0)
            digest = hashlib.sha256()
            while chunk := out.read(_CHUNK):
                digest.update(chunk)
            out.seek(0)
            default_storage.delete(name)  # a half-stored earlier attempt
            saved = default_storage.save(name, File(out, name=Path(name).name))
        if saved != name:
            default_storage.delete(saved)
            raise RuntimeError(f"storage kept {name} as {saved}")
        archive = StoredArchive(name=name, sha256=digest.hexdigest(), size=size)
        default_storage.save(_sidecar(name), ContentFile(f"{archive.sha256} {size}".encode()))
        return archive
