"""Split bundles and search corpora: from storage (local files or S3) to a local directory.

A bundle is extracted once per sha256 under ``<PODIUM_VAR_DIR>/cache/`` and reused by every
run on that machine. A challenge's search corpus (the directory format in docs/internals.md)
is a reproducible tar stored as ``corpora/<challenge>/<sha256>.tar``, recorded by its
``SearchCorpus`` row; the agent never sees it, only the search service reads the corpus.
"""

from __future__ import annotations

import os
import shutil
import tarfile
import tempfile
from pathlib import Path
from typing import IO

from django.conf import settings
from django.core.files import File
from django.core.files.storage import default_storage
from django.db import transaction
from django.utils import timezone

from evaluator.archives import ArchiveError, extract_tar
from leaderboard.models import Challenge, SearchCorpus, Split
from leaderboard.splits import archive_limits, sha256_of
from podium.downloads import file_sha256
from workers.faults import PodiumFault

_CHUNK = 1024 * 1024


class BundleError(PodiumFault):
    """A stored bundle is missing or damaged; an organiser must import it again."""


def cache_root() -> Path:
    return Path(settings.VAR_DIR) / "cache"


def download(name: str, sha256: str, path: Path, what: str) -> None:
    """``name`` from storage copied to ``path`` and checked against ``sha256``; ``BundleError``
    (naming ``what``) when it is missing or differs."""
    try:
        with default_storage.open(name, "rb") as source, path.open("wb") as out:
            shutil.copyfileobj(source, out, _CHUNK)
    except FileNotFoundError:
        raise BundleError(f"{what} {name}: not found in storage") from None
    if file_sha256(path) != sha256:
        raise BundleError(f"{what} {name}: sha256 differs from the recorded one")


def _extract(name: str, sha256: str, kind: str) -> Path:
    """``name`` in storage, checked against ``sha256``, extracted to the cache (once)."""
    target = cache_root() / kind / sha256
    if target.is_dir():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{sha256[:12]}-", dir=target.parent))
    try:
        tar_path = scratch / "bundle.tar"
        download(name, sha256, tar_path, f"{kind} bundle")
        content = scratch / "content"
        try:
            extract_tar(tar_path, content, archive_limits())
        except ArchiveError as e:
            raise BundleError(f"{kind} bundle {name}: {e}") from None
        try:
            os.rename(content, target)  # atomic; a concurrent worker may have won the race
        except OSError:
            if not target.is_dir():
                raise
        return target
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def split_dir(split: Split) -> Path:
    """The split's files (ground truth included: for the worker and the judge, never agents)."""
    name = split.bundle.name
    if not name or not split.sha256:
        raise BundleError(f"split {split}: no bundle imported yet")
    return _extract(name, split.sha256, "splits")


def corpus_name(challenge: Challenge) -> str:
    """Where the challenge's corpus tar is stored (its sha256: ``corpus_sha256``)."""
    found = SearchCorpus.objects.filter(challenge=challenge).values_list("bundle", flat=True)
    name: str | None = found.first()
    if not name:
        raise BundleError(f"challenge {challenge.slug}: no search corpus stored")
    return name


def write_corpus(directory: str | Path, out: IO[bytes]) -> str:
    """A search corpus directory as a reproducible tar written to ``out``; returns its sha256
    (the corpus's identity: the same files give the same digest)."""
    directory = Path(directory)
    for required in ("images.jsonl", "web.jsonl"):
        if not (directory / required).is_file():
            raise BundleError(f"{directory}: not a search corpus (no {required})")
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path in sorted(directory.rglob("*")):
            if path.is_file():
                info = tar.gettarinfo(str(path), arcname=str(path.relative_to(directory)))
                info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
                with path.open("rb") as handle:
                    tar.addfile(info, handle)
    return sha256_of(out)


def store_corpus(
    challenge: Challenge, directory: str | Path, written: list[str] | None = None
) -> str:
    """Store a search corpus directory as the challenge's corpus; returns its sha256.

    The tar (``corpora/<slug>/<sha256>.tar``) and its ``SearchCorpus`` row are written in the
    caller's transaction (or one of their own): a failure there deletes the tar; a caller whose
    own transaction may still fail passes ``written``, which receives the tar's name for it to
    delete (as the bundle importer does for split files). The tar replaced is deleted once the
    transaction commits, never before."""
    with tempfile.TemporaryFile() as bundle:
        sha256 = write_corpus(directory, bundle)
        with transaction.atomic():
            row = SearchCorpus.objects.select_for_update().filter(challenge=challenge).first()
            if row is not None and row.sha256 == sha256:
                return sha256
            name = default_storage.save(f"corpora/{challenge.slug}/{sha256}.tar", File(bundle))
            try:
                with transaction.atomic():
                    SearchCorpus.objects.update_or_create(
                        challenge=challenge,
                        defaults={"bundle": name, "sha256": sha256, "stored_at": timezone.now()},
                    )
            except BaseException:
                default_storage.delete(name)
                raise
            if written is not None:
                written.append(name)
            replaced = row.bundle.name if row is not None else None
            if replaced and replaced != name:
                transaction.on_commit(lambda: default_storage.delete(replaced))
    return sha256


def corpus_sha256(challenge: Challenge) -> str | None:
    found = SearchCorpus.objects.filter(challenge=challenge).values_list("sha256", flat=True)
    return found.first()


def corpus_dir(challenge: Challenge) -> Path | None:
    """The challenge's search corpus on local disk; None when it has none."""
    sha256 = corpus_sha256(challenge)
    if sha256 is None:
        return None
    return _extract(corpus_name(challenge), sha256, "corpora")
