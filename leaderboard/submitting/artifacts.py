"""Checking what a team hands in.

An image archive (``docker save``, plain or compressed) must hold ``manifest.json`` at its top
level; a build context (tar, plain or compressed) must hold a ``Dockerfile`` there. Either is
read as a stream, in constant memory, by ``evaluator.tar_scan`` in a child process with CPU,
memory and time limits: every member name is checked for path traversal, links must stay inside
the archive (chains included), device files are refused, entries and declared bytes are held to
a budget, and the bytes are hashed on the way.

Two passes, so that no upload holds a web worker: the web request gives the check at most
``PODIUM_UPLOAD_CHECK_S`` seconds (``inspect_archive``): what it finds wrong in that time is
the form's error at once; an archive it has not finished is taken (hashed in this process) and
the build stage checks it whole (``check_stored_archive``) before Docker sees it, failing the
submission with the same words. A registry reference must follow Docker's reference grammar,
and may not name one of Podium's own images.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from django.conf import settings
from django.core.exceptions import ValidationError
from django.template.defaultfilters import filesizeformat

from evaluator.archives import ArchiveLimits
from evaluator.tar_scan import Refusal, ScanTimeout, compression_of, scan_file
from leaderboard.models import Submission
from workers.images import is_reserved

Kind = Submission.ArtifactKind
CHUNK_BYTES = 1024 * 1024
STORED_CHECK_S = 300.0  # the build stage's wall time for the whole check
# Compressed tars are accepted (docker load and docker build read them); the file name kept in
# storage says which compression it is (``evaluator.tar_scan`` finds it). The file each
# uploaded kind must hold at its top level:
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
    manifests: dict[str, str] | None = None  # None: not read yet (the build stage reads them)
    dockerfile: str | None = None  # a build context's, when read (``evaluator.tar_scan``)

    @property
    def suffix(self) -> str:
        return f".tar.{self.compression}" if self.compression else ".tar"


def upload_budget(compressed_bytes: int) -> ArchiveLimits:
    """What reading an upload of this size may unpack: the archive limits, and for a compressed
    upload at most ``PODIUM_UPLOAD_MAX_RATIO`` times its size (never under 256 MiB)."""
    ratio_cap = max(256 * 1024**2, settings.PODIUM_UPLOAD_MAX_RATIO * compressed_bytes)
    return ArchiveLimits(
        max_members=settings.PODIUM_ARCHIVE_MAX_MEMBERS,
        max_bytes=min(settings.PODIUM_ARCHIVE_MAX_BYTES, ratio_cap),
    )


@contextlib.contextmanager
def _local_path(stream: IO[bytes]) -> Iterator[str]:
    """A path on disk holding ``stream``'s bytes: the upload's own temporary file, or a copy."""
    path = getattr(stream, "temporary_file_path", None)
    if path is not None:
        yield path()
        return
    with tempfile.NamedTemporaryFile(prefix="podium-upload-", suffix=".tar") as copy:
        stream.seek(0)
        shutil.copyfileobj(stream, copy, CHUNK_BYTES)
        copy.flush()
        yield copy.name


def inspect_archive(stream: IO[bytes], kind: str, label: str) -> ArchiveFacts:
    """The web request's look at an uploaded tar: the check for at most
    ``PODIUM_UPLOAD_CHECK_S`` seconds; raise ``ValidationError`` if it finds it bad.

    ``label`` names the upload in messages (its file name as sent). Reading stops as soon as the
    entries or the bytes they declare pass ``upload_budget``: before their data is read. An
    archive not checked to its end in time is hashed here and taken: the build stage checks it
    (``check_stored_archive``).
    """
    stream.seek(0)
    try:
        with _local_path(stream) as path:
            try:
                return _check(Path(path), kind, label, settings.PODIUM_UPLOAD_CHECK_S)
            except ScanTimeout:
                return _unchecked_facts(Path(path))
    finally:
        stream.seek(0)


def check_stored_archive(path: Path, kind: str, label: str) -> ArchiveFacts:
    """The whole check of a stored upload, in the build stage (no web worker waits for it)."""
    try:
        return _check(path, kind, label, STORED_CHECK_S)
    except ScanTimeout as timeout:
        raise ValidationError(f"{label}: {timeout.why}", code=timeout.code) from None


def _check(path: Path, kind: str, label: str, timeout_s: float) -> ArchiveFacts:
    required = REQUIRED_MEMBER[Kind(kind)]
    total = path.stat().st_size
    budget = upload_budget(total)
    try:
        scan = scan_file(path, budget, required, timeout_s=timeout_s)
    except ScanTimeout:
        raise
    except Refusal as refusal:
        message = _refusal_message(refusal, label, budget, total)
        raise ValidationError(message, code=refusal.code) from None
    if not scan.has_required:
        raise ValidationError(f"{label}: {WHY_REQUIRED[Kind(kind)]}", code=f"no_{required}")
    return ArchiveFacts(
        scan.sha256, scan.size, scan.compression, dict(scan.manifests), scan.dockerfile
    )


def _unchecked_facts(path: Path) -> ArchiveFacts:
    """Hash and size of an archive whose check goes on in the build stage."""
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        compression = compression_of(stream.read(6))
        stream.seek(0)
        while chunk := stream.read(CHUNK_BYTES):
            digest.update(chunk)
    return ArchiveFacts(digest.hexdigest(), path.stat().st_size, compression)


def _refusal_message(refusal: Refusal, label: str, budget: ArchiveLimits, total: int) -> str:
    if refusal.code == "not_tar":
        return f"{label}: not a tar archive ({refusal.why})"
    if refusal.code == "over_budget":
        return (
            f"{label}: entry {refusal.entry!r} takes the archive past {budget.max_members} "
            f"entries or {filesizeformat(budget.max_bytes)} unpacked, the most an upload of "
            f"{filesizeformat(total)} may hold"
        )
    if refusal.entry:
        return f"{label}: entry {refusal.entry!r} {refusal.why}"
    return f"{label}: {refusal.why}"


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
