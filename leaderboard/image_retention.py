"""The retention of agent images' archives in storage (``agent-images/<image ID>.tar``, about
250 MB each): an archive is needed while some run of a submission with that image may still
start or resume (queued, in a stage, re-queued or re-run), and for ``PODIUM_IMAGE_STORE_KEEP_S``
after the last of them finished (and after it was stored); then the sweep
(``housekeeping.sweep_image_archives``, every ``PODIUM_IMAGE_STORE_SWEEP_S``) removes it.

The image's digest stays on the submission and its record (``ImageArchive``) says the archive
is gone, so a later re-run does not wait for it: a node whose engine has the image owes it
again (``leaderboard.pipeline.image_store.offer``), or the build stage makes the image again.

Safe against a run starting meanwhile: each archive is removed in one transaction that first
locks the runs and the submissions of that image and reads their states again; a run's state
change (``EvaluationRun.move_to``, an UPDATE of its row) or a new run (its foreign key locks the
submission) waits for that transaction, and the stage that follows finds the archive gone.
Idempotent: a record already gone is skipped. Only archives with a record are considered: the
starter kit's base image archives are never touched.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.core.files.storage import default_storage
from django.db import DatabaseError, transaction
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from leaderboard.kits import store
from leaderboard.models import EvaluationRun, ImageArchive, Submission
from workers.image_export import archive_name

logger = logging.getLogger("podium")
Kept = ImageArchive.State
ADOPT_PER_SWEEP = 500


@dataclass
class Swept:
    removed: list[str] = field(default_factory=list)  # image IDs
    freed_bytes: int = 0
    adopted: int = 0  # records made for archives stored before records were kept
    settled: int = 0  # archives owed that no run needs: owed by nobody now


def _needing_runs(image_id: str | OuterRef, cutoff: datetime) -> Q:
    """Runs that need the image's archive: not finished, or finished after ``cutoff``."""
    return Q(submission__image_digest=image_id) & (
        ~Q(state__in=EvaluationRun.TERMINAL_STATES) | Q(finished_at__gt=cutoff)
    )


def due(cutoff: datetime) -> list[int]:
    """The records of archives stored before ``cutoff`` that no run needs."""
    needed = EvaluationRun.objects.filter(_needing_runs(OuterRef("image_id"), cutoff))
    stored = ImageArchive.objects.filter(state=Kept.STORED, stored_at__lt=cutoff)
    return list(stored.exclude(Exists(needed)).order_by("pk").values_list("pk", flat=True))


def _remove(record: ImageArchive) -> None:
    """The archive out of storage: its sidecar first (readers take it as not stored)."""
    name = archive_name(record.image_id)
    default_storage.delete(f"{name}.sha256")
    default_storage.delete(name)


def sweep_one(pk: int, cutoff: datetime, now: datetime) -> ImageArchive | None:
    """One archive removed if it still may go: its record, or None when kept."""
    with transaction.atomic():
        record = ImageArchive.objects.select_for_update().filter(pk=pk, state=Kept.STORED).first()
        if record is None:
            return None
        digest = record.image_id
        runs = EvaluationRun.objects.filter(submission__image_digest=digest)
        list(runs.select_for_update(of=("self",)).values_list("pk", flat=True))
        list(Submission.objects.select_for_update().filter(image_digest=digest).values("pk"))
        if runs.filter(_needing_runs(digest, cutoff)).exists():  # read again, under the locks
            return None
        _remove(record)
        ImageArchive.objects.filter(pk=pk).update(state=Kept.GONE, node="", swept_at=now)
        return record


def adopt(now: datetime, limit: int = ADOPT_PER_SWEEP) -> int:
    """Records for submissions' images made before records were kept: stored (their grace
    starting now) or gone, as storage says; at most ``limit`` a sweep."""
    known = ImageArchive.objects.filter(image_id=OuterRef("image_digest"))
    digests = (
        Submission.objects.filter(image_digest__startswith="sha256:")
        .exclude(Exists(known))
        .order_by()
        .values_list("image_digest", flat=True)
        .distinct()[:limit]
    )
    adopted = 0
    for digest in digests:
        archive = store.stored(archive_name(digest))
        state = Kept.GONE if archive is None else Kept.STORED
        _, created = ImageArchive.objects.get_or_create(
            image_id=digest,
            defaults={
                "state": state,
                "size": None if archive is None else archive.size,
                "stored_at": now,
            },
        )
        adopted += created
    return adopted


def settle(cutoff: datetime) -> int:
    """Archives owed that no run needs any more (their node may be gone for good) owed by
    nobody: a node that has the image owes it again at its next run."""
    needed = EvaluationRun.objects.filter(_needing_runs(OuterRef("image_id"), cutoff))
    pending = ImageArchive.objects.filter(state=Kept.PENDING).exclude(Exists(needed))
    return pending.update(state=Kept.GONE, node="")


def sweep(now: datetime | None = None) -> Swept:
    """Every archive no run needs any more removed from storage, and logged."""
    now = now or timezone.now()
    cutoff = now - timedelta(seconds=settings.PODIUM_IMAGE_STORE_KEEP_S)
    swept = Swept(adopted=adopt(now), settled=settle(cutoff))
    for pk in due(cutoff):
        try:
            removed = sweep_one(pk, cutoff, now)
        except DatabaseError as exc:  # e.g. a deadlock with a re-run: the next sweep
            logger.warning("image archive #%s kept for now: %s", pk, exc)
            continue
        if removed is not None:
            size = removed.size or 0
            swept.removed.append(removed.image_id)
            swept.freed_bytes += size
            logger.info(
                "image archive of %s removed (%d bytes): no run needs it", removed.image_id, size
            )
    if swept.removed:
        logger.info(
            "image archives: %d removed, %.1f MB freed", len(swept.removed), swept.freed_bytes / 1e6
        )
    return swept
