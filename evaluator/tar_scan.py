"""Checking an uploaded tar without unpacking it, in a child process with its own limits.

``scan_tar`` reads a tar (plain, gz, bz2 or xz) once, as a stream, in constant memory: every
member must pass ``archives.member_problem`` and the ``LinkTracker``; entries and the bytes they
declare are held to a budget, checked at each header before its data is read; the file's bytes
are hashed on the way. ``scan_file`` runs it as ``python -m evaluator.tar_scan`` with a CPU-time,
memory and wall-clock limit, so no upload, however built, can hold the caller (a web worker)
longer than that or take its memory.

Findings come back as data (``Refusal``: a code, the entry, a reason in Podium's words), for the
caller to phrase. The small manifests a build context may carry at its top level
(``MANIFESTS``: the models it loads) come back as text, and so does its ``Dockerfile`` (the base
images it starts from), when it is a regular file of at most ``MAX_DOCKERFILE_BYTES``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import posixpath
import resource
import subprocess
import sys
import tarfile
import zlib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO

from evaluator.archives import ArchiveLimits, LinkTracker, forget_members, member_problem

CHUNK_BYTES = 1024 * 1024
MAGIC = {b"\x1f\x8b": "gz", b"BZh": "bz2", b"\xfd7zXZ\x00": "xz"}
MANIFESTS = ("aicrowd.json", "podium.json")
MAX_MANIFEST_BYTES = 64 * 1024
DOCKERFILE = "Dockerfile"
MAX_DOCKERFILE_BYTES = 1024 * 1024  # a larger one is left to the build, which reads it whole
REPO = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class TarScan:
    sha256: str
    size: int
    compression: str  # "", "gz", "bz2" or "xz"
    has_required: bool  # the required member is a file at the top level
    manifests: dict[str, str] = field(default_factory=dict)  # MANIFESTS found at the top level
    dockerfile: str | None = None  # the top-level Dockerfile's text (the first, as builds read)


@dataclass
class Refusal(Exception):
    """Why the archive is refused: ``code`` is unsafe_member, over_budget, not_tar or
    over_limits; ``entry`` the member's name where one is to blame; ``why`` Podium's words."""

    code: str
    why: str
    entry: str = ""


class ScanTimeout(Refusal):
    """The check did not finish within the wall time it was given (nothing found wrong yet)."""

    def __init__(self, timeout_s: float) -> None:
        super().__init__("over_limits", f"checking it took more than {timeout_s:g} s")


def compression_of(head: bytes) -> str:
    """The compression a file's first bytes name: "", "gz", "bz2" or "xz"."""
    return next((name for magic, name in MAGIC.items() if head.startswith(magic)), "")


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


def scan_tar(stream: IO[bytes], limits: ArchiveLimits, required: str) -> TarScan:
    """Read the tar ``stream`` from its start; raise ``Refusal`` when it may not be accepted."""
    head = stream.read(6)
    stream.seek(0)
    compression = compression_of(head)
    reader = _HashingReader(stream)
    found = False
    manifests: dict[str, str] = {}
    dockerfile: str | None = None
    first_dockerfile = True
    members = unpacked = 0
    links = LinkTracker()
    try:
        with tarfile.open(fileobj=reader, mode="r|*") as archive:  # type: ignore[call-overload]
            while (member := archive.next()) is not None:
                forget_members(archive)
                if why := member_problem(member) or links.problem(member):
                    raise Refusal("unsafe_member", f"is {why}", member.name)
                members, unpacked = members + 1, unpacked + member.size
                if members > limits.max_members or unpacked > limits.max_bytes:
                    raise Refusal("over_budget", "takes the archive past its budget", member.name)
                name = posixpath.normpath(member.name)
                found = found or (name == required and (member.isfile() or member.islnk()))
                if name in MANIFESTS and member.isfile():
                    if member.size > MAX_MANIFEST_BYTES:
                        raise Refusal(
                            "over_budget", f"is over {MAX_MANIFEST_BYTES} bytes", member.name
                        )
                    data = archive.extractfile(member)
                    assert data is not None  # a regular file
                    manifests[name] = data.read().decode("utf-8", errors="replace")
                elif name == DOCKERFILE and member.isfile() and first_dockerfile:
                    dockerfile, first_dockerfile = _text(archive, member), False
    except (tarfile.TarError, EOFError, OSError, zlib.error) as exc:
        why = "the file is empty" if reader.size == 0 else str(exc) or type(exc).__name__
        raise Refusal("not_tar", why) from None
    if why := links.final_problem():
        raise Refusal("unsafe_member", why)
    while reader.read(CHUNK_BYTES):  # hash what follows the end-of-archive marker too
        pass
    return TarScan(
        reader.sha256.hexdigest(), reader.size, compression, found, manifests, dockerfile
    )


def _text(archive: tarfile.TarFile, member: tarfile.TarInfo) -> str | None:
    """A Dockerfile's text; None when it is too large or not UTF-8 (the build then says why)."""
    if member.size > MAX_DOCKERFILE_BYTES:
        return None
    data = archive.extractfile(member)
    assert data is not None  # a regular file
    try:
        return data.read().decode("utf-8")
    except UnicodeDecodeError:
        return None


def scan_file(
    path: str | Path,
    limits: ArchiveLimits,
    required: str,
    *,
    cpu_s: int = 120,
    memory_bytes: int = 1024**3,
    timeout_s: float = 300,
) -> TarScan:
    """``scan_tar`` on the file at ``path``, in a child process held to ``cpu_s`` seconds of
    CPU, ``memory_bytes`` of address space and ``timeout_s`` of wall time (``ScanTimeout``
    past it)."""
    command = [
        sys.executable,
        "-m",
        "evaluator.tar_scan",
        str(path),
        f"--required={required}",
        f"--max-members={limits.max_members}",
        f"--max-bytes={limits.max_bytes}",
        f"--cpu-s={cpu_s}",
        f"--memory-bytes={memory_bytes}",
    ]
    over = Refusal("over_limits", f"checking it took more than its {cpu_s} s or memory budget")
    try:
        done = subprocess.run(command, cwd=REPO, capture_output=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise ScanTimeout(timeout_s) from None
    try:
        result = json.loads(done.stdout)
    except ValueError:
        raise over from None  # killed by its limits (SIGXCPU, MemoryError) before answering
    if "refusal" in result:
        raise Refusal(**result["refusal"])
    return TarScan(**result["scan"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evaluator.tar_scan", description=__doc__)
    parser.add_argument("path", type=Path)
    parser.add_argument("--required", required=True)
    parser.add_argument("--max-members", type=int, required=True)
    parser.add_argument("--max-bytes", type=int, required=True)
    parser.add_argument("--cpu-s", type=int, default=120)
    parser.add_argument("--memory-bytes", type=int, default=1024**3)
    args = parser.parse_args(argv)
    resource.setrlimit(resource.RLIMIT_CPU, (args.cpu_s, args.cpu_s))
    resource.setrlimit(resource.RLIMIT_AS, (args.memory_bytes, args.memory_bytes))
    limits = ArchiveLimits(max_members=args.max_members, max_bytes=args.max_bytes)
    try:
        with args.path.open("rb") as stream:
            result = {"scan": asdict(scan_tar(stream, limits, args.required))}
    except Refusal as refusal:
        result = {"refusal": asdict(refusal)}
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
