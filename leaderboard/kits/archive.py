"""Making a starter kit archive (``contents.plan`` says what goes in) and keeping it.

The archive is a reproducible ``tar.gz`` (every entry dated 0, owned by root, the gzip header
dated 0 too): the same content version gives the same bytes. Splits and the corpus are copied
from their stored bundles entry by entry, as streams (nothing is unpacked to disk); each
bundle's bytes are checked against its recorded sha256 on the way, and a damaged one stops the
kit (``KitError``) so that nothing wrong is ever stored.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import logging
import tarfile
from pathlib import Path
from typing import IO, TYPE_CHECKING

from django.core.files.storage import default_storage

from evaluator.archives import member_problem
from leaderboard.kits import store
from leaderboard.kits.commands import split_path
from leaderboard.kits.contents import KitPlan, code_files, organiser_file_path, tool_requirements
from leaderboard.models import KitFile
from leaderboard.pipeline.bundles import corpus_name

if TYPE_CHECKING:
    from _typeshed import WriteableBuffer

log = logging.getLogger(__name__)
_CHUNK = 1024 * 1024
TOOLS_INIT = '"""Podium\'s command line (``python -m podium.cli``), as the kit carries it."""\n'


class KitError(Exception):
    """Podium cannot make the kit (its own fault: a stored bundle is missing or damaged)."""


class _Hashing(io.RawIOBase):
    """A stored file read through a sha256."""

    def __init__(self, handle: IO[bytes]) -> None:
        self.handle, self.digest = handle, hashlib.sha256()

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: WriteableBuffer) -> int:
        view = memoryview(buffer).cast("B")
        data = self.handle.read(len(view))
        self.digest.update(data)
        view[: len(data)] = data
        return len(data)


def _info(name: str, size: int, mode: int = 0o644) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = size, mode, 0
    info.uid, info.gid, info.uname, info.gname = 0, 0, "", ""
    return info


def _add_bytes(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    tar.addfile(_info(name, len(data)), io.BytesIO(data))


def _add_file(tar: tarfile.TarFile, name: str, path: Path) -> None:
    mode = 0o755 if path.stat().st_mode & 0o111 else 0o644
    with path.open("rb") as handle:
        tar.addfile(_info(name, path.stat().st_size, mode), handle)


def _copy_bundle(tar: tarfile.TarFile, stored_name: str, sha256: str, prefix: str) -> None:
    """The regular files of the stored tar ``stored_name`` under ``prefix/``."""
    try:
        source = default_storage.open(stored_name, "rb")
    except FileNotFoundError:
        raise KitError(f"{stored_name}: not found in storage") from None
    with source, _Hashing(source) as hashing:
        reader = io.BufferedReader(hashing, _CHUNK)
        with tarfile.open(fileobj=reader, mode="r|") as bundle:
            for member in bundle:
                if problem := member_problem(member):
                    raise KitError(f"{stored_name}: entry {member.name!r} is {problem}")
                if not member.isfile():
                    continue
                info = _info(f"{prefix}/{member.name}", member.size)
                tar.addfile(info, bundle.extractfile(member))
        while reader.read(_CHUNK):  # the tar's end padding: the hash covers every byte
            pass
        if hashing.digest.hexdigest() != sha256:
            raise KitError(f"{stored_name}: its bytes differ from the recorded sha256")


def _copy_file(tar: tarfile.TarFile, kit_file: KitFile, name: str) -> None:
    """An organiser's stored file as the entry ``name``, checked against its sha256."""
    if not (stored := kit_file.file.name):
        raise KitError(f"kit file {kit_file.path}: no file stored")
    try:
        source = default_storage.open(stored, "rb")
    except FileNotFoundError:
        raise KitError(f"{stored}: not found in storage") from None
    with source, _Hashing(source) as hashing:
        tar.addfile(_info(name, kit_file.size), io.BufferedReader(hashing, _CHUNK))
        if hashing.digest.hexdigest() != kit_file.sha256:
            raise KitError(f"{stored}: its bytes differ from the recorded sha256")


def write_kit(plan: KitPlan, out: IO[bytes]) -> None:
    """The kit of ``plan`` as a tar.gz into ``out``."""
    root = plan.folder
    with (
        gzip.GzipFile(filename="", mode="wb", fileobj=out, mtime=0, compresslevel=6) as packed,
        tarfile.open(fileobj=packed, mode="w", format=tarfile.PAX_FORMAT) as tar,
    ):
        _add_bytes(tar, f"{root}/README.md", plan.readme.encode())
        manifest = json.dumps(plan.manifest, indent=2, sort_keys=True) + "\n"
        _add_bytes(tar, f"{root}/kit.json", manifest.encode())
        for path, name in code_files(plan.agent_folders):
            _add_file(tar, f"{root}/{name}", path)
        _add_bytes(tar, f"{root}/tools/podium/__init__.py", TOOLS_INIT.encode())
        _add_bytes(tar, f"{root}/tools/requirements.txt", tool_requirements().encode())
        for split in plan.splits:
            if not split.bundle.name:
                raise KitError(f"split {split}: no bundle imported yet")
            _copy_bundle(tar, split.bundle.name, split.sha256, f"{root}/{split_path(split)}")
        if plan.corpus_sha256:
            name = corpus_name(plan.challenge)
            _copy_bundle(tar, name, plan.corpus_sha256, f"{root}/corpus")
        for kit_file in plan.files:
            _copy_file(tar, kit_file, f"{root}/{organiser_file_path(kit_file)}")


def kit_archive(plan: KitPlan) -> store.StoredArchive:
    """The stored kit of ``plan``, made now if this content version has none yet."""

    def write(out: IO[bytes]) -> None:
        log.info("making the starter kit of %s, version %s", plan.challenge.slug, plan.version)
        write_kit(plan, out)

    return store.store_once(plan.storage_name, write)


def stored_kit(plan: KitPlan) -> store.StoredArchive | None:
    return store.stored(plan.storage_name)
