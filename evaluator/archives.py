"""Tar archives, read safely: the one place Podium decides which members may be unpacked.

``member_problem`` is the rule every archive Podium reads must pass, and ``LinkTracker`` follows
the links read so far, so that a chain of links cannot walk out (uploads checked as a stream use
both). ``extract_tar`` is the one way Podium unpacks a tar to disk (``evaluator.zips`` a zip, by the
same rule, limits and ``Extraction``). It behaves the same on
every supported Python: Debian bookworm's 3.11.2 has no extraction filters (they arrived in
3.11.4), so Podium writes each member itself and never lets ``tarfile`` do it. Where the
standard library has ``tarfile.data_filter``, it is asked as a second opinion on every member.

What gets through: regular files (mode 0644, or 0755 when the archive marks them executable),
directories, hard links to files unpacked before them (copied), and symbolic links that resolve
inside the target. What does not: absolute paths, ``..`` leading out, links that leave the
target (followed through the links before them, and checked again on disk before each write),
devices, pipes, sparse files, an entry that appears twice, and more members or bytes than the
limits allow: a member whose header takes the archive past its byte budget (``ArchiveLimits``,
its compression ratio included) is refused before its data is read, and the bytes written are
counted as well.
Ownership, times and special mode bits in the archive are ignored.
"""

from __future__ import annotations

import os
import posixpath
import tarfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import IO, TypeVar

_CHUNK = 1024 * 1024
# The bytes any archive may unpack to whatever its compression ratio (a small archive of text).
RATIO_FLOOR = 64 * 1024**2
_T = TypeVar("_T")
# None on Python < 3.11.4 (and 3.12.0): the old code path, Podium's own checks only.
_DATA_FILTER: Callable[[tarfile.TarInfo, str], tarfile.TarInfo] | None = getattr(
    tarfile, "data_filter", None
)
# What reading a damaged archive raises (tarfile.FilterError, 3.11.4 on, is a TarError).
_DAMAGED = (tarfile.TarError, EOFError, zlib.error)


class ArchiveError(ValueError):
    """An archive that may not be unpacked; the message names the entry and the reason."""


@dataclass(frozen=True)
class ArchiveLimits:
    """What one extraction may create: members (of any type) and bytes written; ``max_ratio``:
    at most that many bytes written per byte of the archive (a compression bomb inflates
    thousands of times; never under ``RATIO_FLOOR``), None: no ratio."""

    max_members: int = 1_000_000
    max_bytes: int = 64 * 1024**3
    max_ratio: int | None = None

    def budget(self, archive_bytes: int | None) -> int:
        """The bytes an archive of ``archive_bytes`` bytes (None: unknown) may unpack to."""
        if self.max_ratio is None or archive_bytes is None:
            return self.max_bytes
        return min(self.max_bytes, max(RATIO_FLOOR, self.max_ratio * archive_bytes))

    def too_much(self, archive_bytes: int | None) -> str:
        """The budget in words: ``the archive unpacks to more than ...``."""
        budget = self.budget(archive_bytes)
        said = f"the archive unpacks to more than {budget} bytes"
        if budget < self.max_bytes:
            said += (
                f" (what an archive of {archive_bytes} bytes may: {self.max_ratio} times its "
                f"size, never under {RATIO_FLOOR})"
            )
        return said


def member_problem(member: tarfile.TarInfo) -> str | None:
    """Why ``member`` may not be in an archive Podium reads, or None when it may.

    A rule on the member alone (its name, type and link target); ``extract_tar`` also checks
    where a link resolves on disk.
    """
    name = member.name
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        return "an absolute path"
    if ".." in name.split("/"):
        return "a path leading outside the archive (..)"
    if "\x00" in name:
        return "a name with a NUL byte"
    if member.ischr() or member.isblk() or member.isfifo():
        return "a device or pipe, not a file"
    if member.issparse():
        return "a sparse file"
    if member.issym() or member.islnk():
        target = member.linkname
        if target.startswith("/"):
            return f"a link to the absolute path {target!r}"
        # A symlink is relative to its directory, a hard link to the archive's top level.
        base = posixpath.dirname(name) if member.issym() else ""
        resolved = posixpath.normpath(posixpath.join(base, target))
        if resolved == ".." or resolved.startswith("../"):
            return f"a link to {target!r}, outside the archive"
    elif not (member.isfile() or member.isdir()):
        return f"an entry of an unsupported type ({member.type!r})"
    return None


class LinkTracker:
    """The symbolic links met so far in an archive read in order (as a stream): a member whose
    path, or a link whose target, walks out of the archive through them is refused."""

    MAX_HOPS = 40

    def __init__(self) -> None:
        self.links: dict[str, str] = {}

    def problem(self, member: tarfile.TarInfo) -> str | None:
        """Why ``member``, after the links before it, leads outside; None when it does not."""
        name = posixpath.normpath(member.name)
        if self._resolve(posixpath.dirname(name)) is None:
            return "a path leading outside the archive through a link"
        if member.issym():
            if self._resolve(posixpath.join(posixpath.dirname(name), member.linkname)) is None:
                return f"a link to {member.linkname!r}, outside the archive through a link"
            self.links[name] = member.linkname
        if member.islnk() and self._resolve(member.linkname) is None:
            return f"a link to {member.linkname!r}, outside the archive through a link"
        return None

    def final_problem(self) -> str | None:
        """A link that stayed inside when read but leads out through a link read after it."""
        for name, target in self.links.items():
            if self._resolve(posixpath.join(posixpath.dirname(name), target)) is None:
                return f"entry {name!r} is a link leading outside the archive through a link"
        return None

    def _resolve(self, path: str) -> str | None:
        """``path`` with every known link followed; None when it leaves the archive."""
        parts = [p for p in path.split("/") if p not in ("", ".")]
        resolved: list[str] = []
        hops = 0
        while parts:
            part = parts.pop(0)
            if part == "..":
                if not resolved:
                    return None
                resolved.pop()
                continue
            target = self.links.get("/".join([*resolved, part]))
            if target is None:
                resolved.append(part)
                continue
            hops += 1
            if hops > self.MAX_HOPS or target.startswith("/"):
                return None
            parts = [p for p in target.split("/") if p not in ("", ".")] + parts
        return "/".join(resolved)


def extract_tar(
    source: str | Path | IO[bytes], target: str | Path, limits: ArchiveLimits = ArchiveLimits()
) -> None:
    """Unpack the tar ``source`` (a path or a binary stream; plain, gz, bz2 or xz) into the
    directory ``target`` (created when missing), reading it once, as a stream.

    Raises ``ArchiveError`` naming the first entry that may not be unpacked (or what is damaged);
    what was unpacked before it stays in ``target`` for the caller to remove. An ``OSError`` from
    writing (a full disk) is not the archive's fault and passes through as it is.
    """
    root = Path(target)
    root.mkdir(parents=True, exist_ok=True)
    root = root.resolve()
    with _read(lambda: _open(source)) as archive:
        Extraction(root, limits, _size_of(source)).run(archive)


def _size_of(source: str | Path | IO[bytes]) -> int | None:
    """The archive's size in bytes (what its compression ratio is taken of); None: unknown."""
    try:
        if isinstance(source, str | Path):
            return os.stat(source).st_size
        return os.fstat(source.fileno()).st_size
    except (OSError, ValueError):  # a stream with no file under it (io.UnsupportedOperation)
        return None


def _open(source: str | Path | IO[bytes]) -> tarfile.TarFile:
    if isinstance(source, str | Path):
        return tarfile.open(source, mode="r|*")
    return tarfile.open(fileobj=source, mode="r|*")


def _why(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__


def forget_members(archive: tarfile.TarFile) -> None:
    """Drop the members read so far from a streamed archive's list: constant memory whatever
    the number of entries (``TarFile.members`` is not in the type stubs)."""
    archive.members.clear()  # type: ignore[attr-defined]


def _read(read: Callable[[], _T], name: str | None = None) -> _T:
    """``read()`` from the archive, its failures told as ``ArchiveError``."""
    try:
        return read()
    except (*_DAMAGED, OSError) as exc:
        tarinfo = getattr(exc, "tarinfo", None)  # tarfile.FilterError names its member
        if tarinfo is not None:
            raise ArchiveError(f"entry {tarinfo.name!r} is refused ({_why(exc)})") from None
        where = f"entry {name!r}: " if name else ""
        raise ArchiveError(f"{where}not a usable tar archive ({_why(exc)})") from None


class Extraction:
    """Members written under ``root``, counted against ``limits`` for an archive of
    ``archive_bytes`` bytes (tar members by ``run``; zip entries by ``evaluator.zips``)."""

    def __init__(self, root: Path, limits: ArchiveLimits, archive_bytes: int | None) -> None:
        self.root, self.limits = root, limits
        self.budget, self.too_much = limits.budget(archive_bytes), limits.too_much(archive_bytes)
        self.members = self.declared = self.written = 0
        self.links = LinkTracker()

    def run(self, archive: tarfile.TarFile) -> None:
        while (member := _read(archive.next)) is not None:
            forget_members(archive)
            self.members += 1
            if self.members > self.limits.max_members:
                raise ArchiveError(f"more than {self.limits.max_members} entries")
            if why := member_problem(member) or self.links.problem(member):
                raise ArchiveError(f"entry {member.name!r} is {why}")
            self.declare(member.name, member.size if member.isfile() else 0)
            if _DATA_FILTER is not None:  # the standard library's second opinion
                _read(partial(_DATA_FILTER, member, str(self.root)), member.name)
            self._unpack(archive, member)
        if why := self.links.final_problem():
            raise ArchiveError(why)

    def _inside(self, path: str, name: str) -> None:
        real = os.path.realpath(path)
        if real != str(self.root) and not real.startswith(str(self.root) + os.sep):
            raise ArchiveError(f"entry {name!r} leads outside the archive through a link")

    def _unpack(self, archive: tarfile.TarFile, member: tarfile.TarInfo) -> None:
        name = posixpath.normpath(member.name)
        if name == ".":
            return
        path = os.path.join(self.root, name)
        self._inside(os.path.dirname(path), member.name)
        if os.path.lexists(path):
            if member.isdir() and os.path.isdir(path) and not os.path.islink(path):
                return
            raise ArchiveError(f"entry {member.name!r} appears twice")
        os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
        if member.isdir():
            os.mkdir(path, 0o755)
        elif member.issym():
            self._inside(os.path.join(os.path.dirname(path), member.linkname), member.name)
            os.symlink(member.linkname, path)
        elif member.islnk():
            source = os.path.join(self.root, posixpath.normpath(member.linkname))
            self._inside(source, member.name)
            if not os.path.isfile(source):
                raise ArchiveError(f"entry {member.name!r} links to {member.linkname!r}, no file")
            with open(source, "rb") as linked:
                self.write(path, linked, member)
        else:
            data = _read(lambda: archive.extractfile(member), member.name)
            assert data is not None  # a regular file always has data
            self.write(path, data, member)

    def declare(self, name: str, size: int) -> None:
        """A member's size as its header gives it, before its data is read: past the budget,
        refused with nothing of it written."""
        self.declared += size
        if self.declared > self.budget:
            raise ArchiveError(f"entry {name!r}: {self.too_much}")

    def write(self, path: str, data: IO[bytes], member: tarfile.TarInfo) -> None:
        """``data`` to a new file at ``path``, its bytes counted as they are written."""
        mode = 0o755 if member.mode & 0o111 else 0o644
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
        with os.fdopen(os.open(path, flags, mode), "wb") as out:
            while chunk := _read(lambda: data.read(_CHUNK), member.name):
                self.written += len(chunk)
                if self.written > self.budget:
                    raise ArchiveError(f"entry {member.name!r}: {self.too_much}")
                out.write(chunk)


__all__ = [
    "RATIO_FLOOR",
    "ArchiveError",
    "ArchiveLimits",
    "Extraction",
    "LinkTracker",
    "extract_tar",
    "member_problem",
]
