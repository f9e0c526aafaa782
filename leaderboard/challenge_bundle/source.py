"""A bundle opened safely: a directory checked in place, or a zip unpacked into a scratch
directory by ``evaluator.archives.extract_zip`` (the member rule every archive Podium reads
passes, no links, inflated bytes counted).

A directory may hold regular files and directories only: a symbolic link, a hard link (a file
with more than one name), a device or a pipe is refused, and so is a file past
``MAX_FILE_BYTES`` or a bundle past the archive limits (``PODIUM_ARCHIVE_MAX_*``).
"""

from __future__ import annotations

import os
import stat
import tempfile
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from django.conf import settings

from evaluator.archives import ArchiveError, ArchiveLimits, extract_zip
from leaderboard.challenge_bundle.problems import BundleInvalid, Problem

MANIFEST = "challenge.yaml"


def limits() -> ArchiveLimits:
    return ArchiveLimits(settings.PODIUM_ARCHIVE_MAX_MEMBERS, settings.PODIUM_ARCHIVE_MAX_BYTES)


def _refuse(name: str, message: str) -> BundleInvalid:
    return BundleInvalid([Problem(name, None, "(bundle)", message)])


def check_tree(root: Path, bound: ArchiveLimits) -> None:
    """Refuse anything but plain files and directories under ``root``, and too much of it."""
    members = total = 0
    for directory, dirs, files in os.walk(root, followlinks=False):
        for name in (*dirs, *files):
            path = Path(directory, name)
            shown = str(path.relative_to(root))
            info = path.lstat()
            members += 1
            if stat.S_ISLNK(info.st_mode):
                raise _refuse(shown, "a symbolic link: a bundle holds plain files only")
            if stat.S_ISDIR(info.st_mode):
                continue
            if not stat.S_ISREG(info.st_mode):
                raise _refuse(shown, "a device, pipe or socket: a bundle holds plain files only")
            if info.st_nlink > 1:
                raise _refuse(shown, "a hard link (a file with two names): copy the file")
            if info.st_size > settings.PODIUM_BUNDLE_MAX_FILE_BYTES:
                raise _refuse(
                    shown,
                    f"{info.st_size} bytes, more than a bundle's file may hold "
                    f"({settings.PODIUM_BUNDLE_MAX_FILE_BYTES}, PODIUM_BUNDLE_MAX_FILE_BYTES)",
                )
            total += info.st_size
        if members > bound.max_members or total > bound.max_bytes:
            raise _refuse(
                ".",
                f"more than {bound.max_members} entries or {bound.max_bytes} bytes "
                "(PODIUM_ARCHIVE_MAX_MEMBERS, PODIUM_ARCHIVE_MAX_BYTES)",
            )


@contextmanager
def opened(source: str | Path) -> Iterator[Path]:
    """The bundle's root directory (``challenge.yaml`` in it), for the block's duration."""
    path = Path(source)
    if path.is_dir() and not path.is_symlink():
        check_tree(path, limits())
        yield _manifest_root(path, str(source))
        return
    if not path.is_file():
        raise _refuse(str(source), "neither a bundle directory nor a zip file")
    if not zipfile.is_zipfile(path):
        raise _refuse(str(source), "not a zip archive (a bundle is a directory or a .zip)")
    with tempfile.TemporaryDirectory(prefix="podium-bundle-") as scratch:
        try:
            extract_zip(path, scratch, limits())
        except ArchiveError as exc:
            raise _refuse(path.name, str(exc)) from None
        check_tree(Path(scratch), limits())
        yield _manifest_root(Path(scratch), path.name)


def _manifest_root(root: Path, shown: str) -> Path:
    """``root``, or the one folder it holds (a zip of the bundle's folder)."""
    if (root / MANIFEST).is_file():
        return root
    entries = list(root.iterdir())
    if len(entries) == 1 and entries[0].is_dir() and (entries[0] / MANIFEST).is_file():
        return entries[0]
    raise _refuse(shown, f"no {MANIFEST} at the bundle's root")
