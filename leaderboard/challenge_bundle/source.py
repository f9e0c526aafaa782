"""A bundle opened safely, its manifest first: ``opened`` reads ``challenge.yaml`` (at most
``MAX_MANIFEST_BYTES``, by a bounded read) and hands its text to ``admit``, where who may import
the bundle is decided, before anything else of the bundle is read, parsed or unpacked.

- A directory is checked in place: it may hold regular files and directories only (a symbolic
  link, a hard link, a device or a pipe is refused), no file past ``MAX_FILE_BYTES``, no more
  than the archive limits (``PODIUM_ARCHIVE_MAX_*``).
- A zip's central directory is read once its size is known to be within
  ``PODIUM_BUNDLE_MAX_MEMBERS`` entries (``evaluator.zips.open_zip``), its manifest read from
  it, and only once ``admit`` has let it through are its entries checked (names, and the bytes
  they declare within ``PODIUM_BUNDLE_MAX_BYTES`` and ``PODIUM_BUNDLE_MAX_RATIO`` times the
  zip's size) and unpacked into a scratch directory, the bytes inflated counted. The split and
  corpus tars in a bundle are held to the same bytes and ratio (``tar_limits``).
"""

from __future__ import annotations

import os
import stat
import tempfile
import zipfile
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TypeVar

from django.conf import settings

from evaluator.archives import ArchiveError, ArchiveLimits
from evaluator.zips import TooLarge, ZipReader, open_zip
from leaderboard.challenge_bundle.problems import BundleInvalid, Problem

MANIFEST = "challenge.yaml"
MAX_MANIFEST_BYTES = 128 * 1024  # the demo challenges' are 1 to 3 KB; pages are files of their own
_Admitted = TypeVar("_Admitted")


def limits() -> ArchiveLimits:
    """What a bundle zip may unpack to."""
    return ArchiveLimits(
        settings.PODIUM_BUNDLE_MAX_MEMBERS,
        settings.PODIUM_BUNDLE_MAX_BYTES,
        settings.PODIUM_BUNDLE_MAX_RATIO,
    )


def tar_limits() -> ArchiveLimits:
    """What a split or corpus tar in a bundle may unpack to (its members: as any archive's)."""
    return ArchiveLimits(
        settings.PODIUM_ARCHIVE_MAX_MEMBERS,
        settings.PODIUM_BUNDLE_MAX_BYTES,
        settings.PODIUM_BUNDLE_MAX_RATIO,
    )


def _tree_limits() -> ArchiveLimits:
    return ArchiveLimits(settings.PODIUM_ARCHIVE_MAX_MEMBERS, settings.PODIUM_ARCHIVE_MAX_BYTES)


def _refuse(name: str, message: str) -> BundleInvalid:
    return BundleInvalid([Problem(name, None, "(bundle)", message)])


def _manifest_problem(message: str) -> BundleInvalid:
    return BundleInvalid([Problem(MANIFEST, None, "(file)", message)])


_TOO_LARGE = f"more than {MAX_MANIFEST_BYTES} bytes; at most {MAX_MANIFEST_BYTES}"


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
def opened(
    source: str | Path, admit: Callable[[str], _Admitted], shown: str | None = None
) -> Iterator[tuple[Path, _Admitted]]:
    """The bundle's root directory (``challenge.yaml`` in it) for the block's duration, and what
    ``admit`` made of its manifest's text (it raises to refuse the bundle); ``shown``: the zip's
    name in problems (its file's, by default)."""
    path = Path(source)
    if path.is_dir() and not path.is_symlink():
        root = _manifest_root(path, str(source))
        admitted = admit(_text(_directory_manifest(root / MANIFEST)))
        check_tree(path, _tree_limits())
        yield root, admitted
        return
    shown = shown or path.name
    if not path.is_file():
        raise _refuse(str(source), "neither a bundle directory nor a zip file")
    if not zipfile.is_zipfile(path):
        raise _refuse(shown, "not a zip archive (a bundle is a directory or a .zip)")
    with ExitStack() as stack:
        try:
            reader = stack.enter_context(open_zip(path, limits()))
            manifest = _zip_manifest(reader, shown)
        except ArchiveError as exc:
            raise _refuse(shown, str(exc)) from None
        admitted = admit(_text(manifest))
        scratch = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="podium-bundle-")))
        try:
            reader.unpack(scratch)
        except ArchiveError as exc:
            raise _refuse(shown, str(exc)) from None
        check_tree(scratch, _tree_limits())
        yield _manifest_root(scratch, shown), admitted


def _directory_manifest(path: Path) -> bytes:
    if path.stat().st_size > MAX_MANIFEST_BYTES:
        raise _manifest_problem(_TOO_LARGE)
    with path.open("rb") as f:
        data = f.read(MAX_MANIFEST_BYTES + 1)
    if len(data) > MAX_MANIFEST_BYTES:  # it grew since
        raise _manifest_problem(_TOO_LARGE)
    return data


def _zip_manifest(reader: ZipReader, shown: str) -> bytes:
    """The manifest at the zip's root, or in the one folder it holds."""
    files = reader.files()
    folders = {name.split("/")[0] for name in files}
    name = MANIFEST if MANIFEST in files or len(folders) != 1 else f"{folders.pop()}/{MANIFEST}"
    if name not in files:
        raise _refuse(shown, f"no {MANIFEST} at the bundle's root")
    try:
        return reader.read(name, MAX_MANIFEST_BYTES)
    except TooLarge:
        raise _manifest_problem(_TOO_LARGE) from None


def _text(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _manifest_problem(f"not UTF-8 ({exc})") from None


def _manifest_root(root: Path, shown: str) -> Path:
    """``root``, or the one folder it holds (a zip of the bundle's folder)."""
    if (root / MANIFEST).is_file():
        return root
    entries = list(root.iterdir())
    if len(entries) == 1 and entries[0].is_dir() and (entries[0] / MANIFEST).is_file():
        return entries[0]
    raise _refuse(shown, f"no {MANIFEST} at the bundle's root")
