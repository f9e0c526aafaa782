"""Zip archives, read safely: checked whole from their central directory before anything in
them is written, then unpacked by ``archives.Extraction`` under the member rule every archive
Podium reads passes (``archives.member_problem``), stricter: no links of any kind, no encrypted
entries.

``open_zip`` reads the central directory once its size is known to be within the member limit
(from the end record, before ``zipfile`` parses a directory of millions of entries); one small
file can then be read from it (``ZipReader.read``, bounded), e.g. a manifest that decides
whether to go on. ``ZipReader.unpack`` refuses, before a byte is written: more entries than
the limit, an entry the member rule refuses, a name twice, and entries declaring more bytes
than the limits' budget for the archive's size (its compression ratio included). A zip's
declared sizes may lie: ``zipfile`` never returns more than an entry declares (its CRC fails
otherwise), and ``Extraction`` counts what it writes.
"""

from __future__ import annotations

import os
import posixpath
import stat
import tarfile
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from evaluator.archives import ArchiveError, ArchiveLimits, Extraction, member_problem

_CHUNK = 1024 * 1024
# A central directory entry's usual size (46 bytes and a name): a directory larger than the
# member limit times this is refused before it is parsed.
CENTRAL_ENTRY_BYTES = 256
# zipfile's own reading of the end record (the one ZipFile trusts, comment and zip64 included):
# the directory's size and entry count, read before ZipFile parses the directory.
_END_RECORD = zipfile._EndRecData  # type: ignore[attr-defined]
_ENTRIES, _DIRECTORY_BYTES = zipfile._ECD_ENTRIES_TOTAL, zipfile._ECD_SIZE  # type: ignore[attr-defined]
_DAMAGED = (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError)


class TooLarge(ArchiveError):
    """A file larger than the caller reads (``ZipReader.read``)."""


@dataclass
class ZipReader:
    """A zip whose central directory ``open_zip`` read; nothing read from its entries yet."""

    archive: zipfile.ZipFile
    size: int  # the archive's bytes (its compression ratio is taken of them)
    limits: ArchiveLimits

    def files(self) -> list[str]:
        """The names of its files (directories left out), normalised."""
        return [posixpath.normpath(e.filename) for e in self.archive.infolist() if not e.is_dir()]

    def read(self, name: str, max_bytes: int) -> bytes:
        """The file ``name`` (as ``files`` gives it); ``TooLarge`` past ``max_bytes``, from its
        header or, where that lies, after reading ``max_bytes`` and one more."""
        entry = next(e for e in self.archive.infolist() if posixpath.normpath(e.filename) == name)
        too_big = TooLarge(f"entry {name!r}: more than {max_bytes} bytes")
        if entry.file_size > max_bytes:
            raise too_big
        try:
            with self.archive.open(entry) as data:
                found = data.read(max_bytes + 1)
        except (*_DAMAGED, RuntimeError) as exc:  # RuntimeError: encrypted
            raise ArchiveError(f"entry {name!r}: damaged ({_why(exc)})") from None
        if len(found) > max_bytes:
            raise too_big
        return found

    def unpack(self, target: str | Path) -> None:
        """Every entry into the directory ``target`` (created when missing), all of them
        checked first (the module's rules). Raises ``ArchiveError``; what was unpacked before
        stays in ``target`` for the caller to remove."""
        _check(self.archive.infolist(), self.limits, self.size)
        root = Path(target)
        root.mkdir(parents=True, exist_ok=True)
        extraction = Extraction(root.resolve(), self.limits, self.size)
        for entry in self.archive.infolist():
            path = os.path.join(extraction.root, posixpath.normpath(entry.filename))
            if entry.is_dir():
                os.makedirs(path, mode=0o755, exist_ok=True)
                continue
            os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
            if os.path.lexists(path):
                raise ArchiveError(f"entry {entry.filename!r} appears twice")
            member = tarfile.TarInfo(entry.filename)
            member.mode = (entry.external_attr >> 16) & 0o777
            try:
                with self.archive.open(entry) as data:
                    extraction.write(path, data, member)
            except _DAMAGED as exc:
                raise ArchiveError(f"entry {entry.filename!r}: damaged ({_why(exc)})") from None


@contextmanager
def open_zip(source: str | Path, limits: ArchiveLimits) -> Iterator[ZipReader]:
    """The zip at ``source``, its central directory read when its size is within ``limits``
    (``ArchiveError`` otherwise)."""
    path = Path(source)
    try:
        size = path.stat().st_size
        with path.open("rb") as f:
            end = _END_RECORD(f)
    except OSError as exc:
        raise ArchiveError(f"not a usable zip archive ({_why(exc)})") from None
    if end is None:
        raise ArchiveError("not a usable zip archive (no end of central directory record)")
    if end[_ENTRIES] > limits.max_members:
        raise ArchiveError(f"more than {limits.max_members} entries")
    if end[_DIRECTORY_BYTES] > limits.max_members * CENTRAL_ENTRY_BYTES:
        raise ArchiveError(
            f"a central directory of {end[_DIRECTORY_BYTES]} bytes: more than "
            f"{limits.max_members} entries take"
        )
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise ArchiveError(f"not a usable zip archive ({_why(exc)})") from None
    with archive:
        if len(archive.infolist()) > limits.max_members:
            raise ArchiveError(f"more than {limits.max_members} entries")
        yield ZipReader(archive, size, limits)


def extract_zip(source: str | Path, target: str | Path, limits: ArchiveLimits) -> None:
    """Unpack the zip ``source`` into the directory ``target``: ``open_zip``, then
    ``ZipReader.unpack``."""
    with open_zip(source, limits) as reader:
        reader.unpack(target)


def _check(entries: list[zipfile.ZipInfo], limits: ArchiveLimits, size: int) -> None:
    if len(entries) > limits.max_members:
        raise ArchiveError(f"more than {limits.max_members} entries")
    budget, declared = limits.budget(size), 0
    files: set[str] = set()
    dirs: set[str] = set()
    for entry in entries:
        if why := _entry_problem(entry):
            raise ArchiveError(f"entry {entry.filename!r} is {why}")
        name = posixpath.normpath(entry.filename)
        if name in files or (not entry.is_dir() and name in dirs):
            raise ArchiveError(f"entry {entry.filename!r} appears twice")
        (dirs if entry.is_dir() else files).add(name)
        declared += entry.file_size
        if declared > budget:
            raise ArchiveError(f"entry {entry.filename!r}: {limits.too_much(size)}")


def write_zip(root: Path, out: IO[bytes]) -> None:
    """The files under ``root`` as a reproducible zip (sorted, every entry dated 1980-01-01,
    mode 0644): the same files make the same bytes."""
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(root.rglob("*")):
            if path.is_file() and not path.is_symlink():
                info = zipfile.ZipInfo(path.relative_to(root).as_posix())
                info.external_attr = 0o644 << 16
                info.compress_type = zipfile.ZIP_DEFLATED
                with path.open("rb") as data, archive.open(info, "w") as entry:
                    while chunk := data.read(_CHUNK):
                        entry.write(chunk)


def _entry_problem(entry: zipfile.ZipInfo) -> str | None:
    mode = entry.external_attr >> 16
    if stat.S_ISLNK(mode):
        return "a symbolic link (a zip may hold files and directories only)"
    if entry.flag_bits & 0x1:
        return "encrypted"
    member = tarfile.TarInfo(entry.filename)
    member.type = tarfile.DIRTYPE if entry.is_dir() else tarfile.REGTYPE
    if stat.S_IFMT(mode) not in (0, stat.S_IFREG, stat.S_IFDIR):
        return "a device, pipe or socket, not a file"
    return member_problem(member)


def _why(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__
