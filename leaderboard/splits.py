"""Importing a split: validate it with the task's benchmark, store it as a tar bundle with its
sha256.

The bundle holds the files the benchmark names (``Benchmark.bundle_files``: CRAG-MM's
``sessions.jsonl`` and images, also when the source was the Hugging Face layout; Visual-RAG's
query file and candidate images), enough for ``load_split`` to read it back. Bundles live in
private storage: no URL serves them.
"""

from __future__ import annotations

import hashlib
import tarfile
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import IO

from django.conf import settings
from django.core.files import File
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from evaluator.archives import ArchiveError, ArchiveLimits, extract_tar
from evaluator.benchmarks import get_benchmark
from evaluator.records import EvaluatorError
from evaluator.seam import SomeSplits
from leaderboard.models import Split, Task

_CHUNK = 1024 * 1024


class SplitImportError(Exception):
    """A split that cannot be imported; the message names the file, line and field."""


def _add(tar: tarfile.TarFile, path: Path, name: str) -> None:
    info = tar.gettarinfo(str(path), arcname=name)
    info.mtime, info.uid, info.gid, info.uname, info.gname, info.mode = 0, 0, 0, "", "", 0o644
    with path.open("rb") as f:
        tar.addfile(info, f)


def archive_limits() -> ArchiveLimits:
    """What unpacking one archive may create, from the settings."""
    return ArchiveLimits(settings.PODIUM_ARCHIVE_MAX_MEMBERS, settings.PODIUM_ARCHIVE_MAX_BYTES)


def write_bundle(root: Path, files: list[str], out: IO[bytes]) -> str:
    """Write ``files`` (relative to ``root``) as a reproducible tar to ``out``; returns its
    sha256."""
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name in files:
            _add(tar, root / name, name)
    return sha256_of(out)


def sha256_of(out: IO[bytes]) -> str:
    """The sha256 of the whole of ``out``, read from its start; left at its start."""
    out.seek(0)
    digest = hashlib.sha256()
    while chunk := out.read(_CHUNK):
        digest.update(chunk)
    out.seek(0)
    return digest.hexdigest()


def find_task(reference: str) -> Task:
    """``<challenge-slug>/<task-id>`` -> Task."""
    challenge, sep, task_id = reference.partition("/")
    if not sep or not challenge or not task_id:
        raise SplitImportError(f"task {reference!r}: expected <challenge>/<task-id>")
    task = Task.objects.filter(challenge__slug=challenge, task_id=task_id).first()
    if task is None:
        known = ", ".join(str(t) for t in Task.objects.select_related("challenge")) or "none"
        raise SplitImportError(f"task {reference!r} does not exist (known: {known})")
    return task


def import_split_dir(
    task: Task,
    kind: str,
    directory: str | Path,
    *,
    hf_split: str | None = None,
    visibility: str | None = None,
    reveal_at: datetime | None = None,
    notes: list[str] | None = None,
) -> Split:
    """Validate ``directory`` (Podium's format or the benchmark's released layout) with the
    task's benchmark and store it as the ``kind`` split of ``task`` (``save_split``: in place,
    or as a new version of a split that has runs). ``hf_split``: CRAG-MM's Hugging Face split
    to read. ``notes`` gets what loading changed in released data (``Benchmark.split_notes``)."""
    if kind not in Split.Kind.values:
        raise SplitImportError(
            f"split kind {kind!r}: expected one of {', '.join(Split.Kind.values)}"
        )
    if visibility is not None and visibility not in Split.Visibility.values:
        raise SplitImportError(
            f"visibility {visibility!r}: expected one of {', '.join(Split.Visibility.values)}"
        )
    root = Path(directory)
    with prepared_split(task.benchmark, root, hf_split=hf_split) as prepared:
        if notes is not None:
            notes.extend(prepared.notes)
        return save_split(task, kind, prepared, visibility, reveal_at)


@dataclass(frozen=True)
class PreparedSplit:
    """A split read by its benchmark and written as its bundle, not yet stored."""

    bundle: IO[bytes]
    sha256: str
    counts: tuple[int, int]  # groups, items (``Benchmark.split_counts``)
    notes: list[str]  # what loading changed in released data


@contextmanager
def prepared_split(
    benchmark_name: str, root: Path, *, hf_split: str | None = None
) -> Iterator[PreparedSplit]:
    """``root`` read by the benchmark and written as a bundle to a temporary file, for the
    block's duration. Raises :class:`SplitImportError`."""
    if not root.exists():
        raise SplitImportError(f"{root}: does not exist")
    benchmark: SomeSplits = get_benchmark(benchmark_name)
    with tempfile.TemporaryDirectory(prefix="podium-split-") as scratch:
        try:
            data = benchmark.load_split(root, hf_split=hf_split, cache_dir=Path(scratch) / "hf")
        except EvaluatorError as e:
            raise SplitImportError(str(e)) from e
        with tempfile.TemporaryFile() as bundle:
            sha256 = write_bundle(data.root, benchmark.bundle_files(data), bundle)
            counts = benchmark.split_counts(data)
            yield PreparedSplit(bundle, sha256, counts, list(benchmark.split_notes(data)))


def import_split_bundle(
    task: Task,
    kind: str,
    upload: IO[bytes],
    *,
    hf_split: str | None = None,
    visibility: str | None = None,
    reveal_at: datetime | None = None,
    notes: list[str] | None = None,
) -> Split:
    """Import a tar of a split directory (the admin's upload); unsafe members are refused."""
    with tempfile.TemporaryDirectory(prefix="podium-upload-") as scratch:
        try:
            root = unpack_upload(upload, Path(scratch))
        except ArchiveError as e:
            raise SplitImportError(f"the uploaded bundle: {e}") from e
        return import_split_dir(
            task, kind, root, hf_split=hf_split, visibility=visibility, reveal_at=reveal_at,
            notes=notes,
        )  # fmt: skip


def unpack_upload(upload: IO[bytes], scratch: Path, limits: ArchiveLimits | None = None) -> Path:
    """Unpack an uploaded tar (plain or compressed) of a directory into ``scratch`` within
    ``limits`` (the archive limits by default); the directory: ``scratch``, or the one folder
    the tar holds (a tar of the directory itself). Raises :class:`ArchiveError` (unsafe or
    oversized members)."""
    extract_tar(upload, scratch, limits or archive_limits())
    entries = list(scratch.iterdir())
    if len(entries) == 1 and entries[0].is_dir() and entries[0].name != "images":
        return entries[0]
    return scratch


@transaction.atomic
def save_split(
    task: Task,
    kind: str,
    prepared: PreparedSplit,
    visibility: str | None = None,
    reveal_at: datetime | None = None,
) -> Split:
    """Store ``prepared`` as the current ``kind`` split of ``task``. A split that has runs is
    never replaced in place: the data becomes its next version (``Split.version``), current
    from now on, and the earlier one is superseded with its runs, scores, boards and bundle
    file. A split without runs is replaced in place (its earlier bundle file is deleted once
    the transaction commits, unless another version keeps it)."""
    found = Split.objects.select_for_update().current().filter(task=task, kind=kind).first()
    split = found or Split(task=task, kind=kind)
    if found is not None and found.runs.exists():
        split = _next_version(found)
    old_name = split.bundle.name if split.bundle else ""
    split.sha256 = prepared.sha256
    prepared.bundle.seek(0)
    split.bundle.save(f"{prepared.sha256}.tar", File(prepared.bundle), save=False)
    split.groups, split.items = prepared.counts
    split.imported_at = timezone.now()
    if visibility is not None:
        split.visibility = visibility
    if reveal_at is not None:
        split.reveal_at = reveal_at
    split.save()
    kept = Split.objects.filter(bundle=old_name).exists()
    if old_name and old_name != split.bundle.name and not kept:
        storage = split.bundle.storage
        transaction.on_commit(lambda: storage.delete(old_name))
    return split


def _next_version(current: Split) -> Split:
    """A new version of ``current``'s (task, kind), not yet saved, with its visibility and
    reveal time; ``current`` superseded now (first: one current version at a time)."""
    Split.objects.filter(pk=current.pk).update(superseded_at=timezone.now())
    last = Split.objects.filter(task=current.task, kind=current.kind).aggregate(n=Max("version"))
    return Split(
        task=current.task,
        kind=current.kind,
        version=last["n"] + 1,
        visibility=current.visibility,
        reveal_at=current.reveal_at,
    )
