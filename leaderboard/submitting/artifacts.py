"""Checking what a team hands in before anything is stored.

An image archive (``docker save``, plain or compressed) must hold ``manifest.json`` at its top
level; a build context (tar, plain or compressed) must hold a ``Dockerfile`` there. Either is
read once, as a stream, in constant memory: every member name is checked for path traversal,
links must stay inside the archive, device files are refused, and the bytes are hashed on the
way. A registry reference must follow Docker's reference grammar.
"""

from __future__ import annotations

import hashlib
import io
import posixpath
import re
import tarfile
import zlib
from dataclasses import dataclass
from typing import IO

from django.conf import settings
from django.core.exceptions import ValidationError
from django.template.defaultfilters import filesizeformat

from evaluator.archives import ArchiveLimits, LinkTracker, member_problem
from leaderboard.models import Submission
from workers.images import is_reserved

Kind = Submission.ArtifactKind
CHUNK_BYTES = 1024 * 1024
# Compressed tars are accepted (docker load and docker build read them); the file name kept in
# storage says which compression it is.
MAGIC = {b"\x1f\x8b": "gz", b"BZh": "bz2", b"\xfd7zXZ\x00": "xz"}
# The file each uploaded kind must hold at its top level.
REQUIRED_MEMBER = {Kind.IMAGE_ARCHIVE: "manifest.json", Kind.BUILD_CONTEXT: "Dockerfile"}
WHY_REQUIRED = {
    Kind.IMAGE_ARCHIVE: "not a docker save archive: it has no manifest.json at its top level",
    Kind.BUILD_CONTEXT: "not a build context: it has no Dockerfile at its top level",
}

# Docker's reference grammar: [domain[:port]/]path[:tag][@digest]
_LABEL = r"[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?"
_DOMAIN = rf"(?:{_LABEL}(?:\.{_LABEL})*|\[[0-9a-fA-F:]+\])(?::[0-9]+)?"
_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_TAG = r"[\w][\w.-]{0,127}"
_DIGEST = r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}"
REFERENCE = re.compile(
    rf"(?:(?P<domain>{_DOMAIN})/)?(?P<path>{_COMPONENT}(?:/{_COMPONENT})*)"
    rf"(?::(?P<tag>{_TAG}))?(?:@(?P<digest>{_DIGEST}))?"
)
MAX_REPOSITORY_NAME = 255


@dataclass(frozen=True)
class ArchiveFacts:
    """What reading an uploaded archive established."""

    sha256: str
    size: int
    compression: str  # "", "gz", "bz2" or "xz"

    @property
    def suffix(self) -> str:
        return f".tar.{self.compression}" if self.compression else ".tar"


class _HashingReader:
    """A read-only stream that hashes and counts the bytes read through it."""

    def __init__(self, raw: IO[bytes]) -> None:
        self.raw = raw
        self.sha256 = hashlib.sha256()
        self.size = 0

    def read(self, size: int = -1) -> bytes:
        data = self.raw.read(size)
        self.sha256.update(data)
        self.size += len(data)
        return data


def _compression(stream: IO[bytes]) -> str:
    head = stream.read(6)
    stream.seek(0)
    return next((name for magic, name in MAGIC.items() if head.startswith(magic)), "")


def upload_budget(compressed_bytes: int) -> ArchiveLimits:
    """What reading an upload of this size may unpack: the archive limits, and for a compressed
    upload at most ``PODIUM_UPLOAD_MAX_RATIO`` times its size (never under 256 MiB)."""
    ratio_cap = max(256 * 1024**2, settings.PODIUM_UPLOAD_MAX_RATIO * compressed_bytes)
    return ArchiveLimits(
        max_members=settings.PODIUM_ARCHIVE_MAX_MEMBERS,
        max_bytes=min(settings.PODIUM_ARCHIVE_MAX_BYTES, ratio_cap),
    )


def inspect_archive(stream: IO[bytes], kind: str, label: str) -> ArchiveFacts:
    """Read an uploaded tar once from the start of ``stream``; raise ``ValidationError`` if bad.

    ``label`` names the upload in messages (its file name as sent). Reading stops as soon as the
    entries or the bytes they declare pass ``upload_budget``: before their data is read.
    """
    required = REQUIRED_MEMBER[Kind(kind)]
    total = stream.seek(0, io.SEEK_END)
    budget = upload_budget(total)
    stream.seek(0)
    compression = _compression(stream)
    reader = _HashingReader(stream)
    found = False
    members = unpacked = 0
    links = LinkTracker()
    try:
        with tarfile.open(fileobj=reader, mode="r|*") as archive:
            while (member := archive.next()) is not None:
                # Stream mode cannot go back, so the list of members read so far is of no use;
                # emptying it keeps memory constant whatever the number of entries.
                archive.members.clear()
                if why := member_problem(member) or links.problem(member):
                    raise ValidationError(
                        f"{label}: entry {member.name!r} is {why}", code="unsafe_member"
                    )
                members, unpacked = members + 1, unpacked + member.size
                if members > budget.max_members or unpacked > budget.max_bytes:
                    raise ValidationError(
                        f"{label}: entry {member.name!r} takes the archive past "
                        f"{budget.max_members} entries or {filesizeformat(budget.max_bytes)} "
                        f"unpacked, the most an upload of {filesizeformat(total)} may hold",
                        code="over_budget",
                    )
                top_level = posixpath.normpath(member.name) == required
                found = found or (top_level and (member.isfile() or member.islnk()))
    except (tarfile.TarError, EOFError, OSError, zlib.error) as exc:
        why = "the file is empty" if reader.size == 0 else str(exc) or type(exc).__name__
        raise ValidationError(f"{label}: not a tar archive ({why})", code="not_tar") from None
    if why := links.final_problem():
        raise ValidationError(f"{label}: {why}", code="unsafe_member")
    if not found:
        raise ValidationError(f"{label}: {WHY_REQUIRED[Kind(kind)]}", code=f"no_{required}")
    while reader.read(CHUNK_BYTES):  # hash what follows the end-of-archive marker too
        pass
    stream.seek(0)
    return ArchiveFacts(sha256=reader.sha256.hexdigest(), size=reader.size, compression=compression)


def check_reference(ref: str) -> str:
    """A registry reference, stripped; ``ValidationError`` when it is not one."""
    ref = ref.strip()
    if not ref:
        raise ValidationError("give an image reference, e.g. ghcr.io/team/agent:1", code="empty")
    match = REFERENCE.fullmatch(ref)
    if match is None:
        hint = " (repository names are lower case)" if ref != ref.lower() else ""
        raise ValidationError(
            f"{ref!r} is not an image reference of the form "
            f"[registry/]name[:tag][@sha256:digest]{hint}",
            code="bad_reference",
        )
    name = f"{match['domain']}/{match['path']}" if match["domain"] else match["path"]
    if len(name) > MAX_REPOSITORY_NAME:
        raise ValidationError(
            f"the repository name is longer than {MAX_REPOSITORY_NAME} characters",
            code="bad_reference",
        )
    if is_reserved(ref):
        raise ValidationError(
            f"{ref!r}: this name is reserved for Podium's own images", code="reserved"
        )
    return ref
