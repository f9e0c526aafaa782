"""Every slice dimension's statistics (``leaderboard.slice_statistics``) stored per version of
a split's results, so that no view computes them.

A results change (``board_store.results_changed``) of a split whose runs' units carry slice
values sends, once it commits, the task ``boards.store_slice_statistics``
(``leaderboard.tasks``, on the ``default`` queue) with the split's new ``results_version``;
the task (``store_all``) computes every dimension of every setting's board for that version and
stores them (``RankedSlices``, one row per split, setting and dimension). A task whose version
is no longer the split's does nothing: the later change sent its own.

The slice page, API and exports read them (``read``, ~10 ms a 1,000-entry dimension):
the stored row when its version is the split's, else (the task has not run yet, its message
was lost, the broker was down) computed there as before and stored. A stale version is never
shown: a row counts only while its version is the split's. A message lost on the way is sent
again by the reaper (``resend_waiting``): the split's ``slice_statistics_due_at``, set when the
change sends it, says how long a version without stored rows has waited. (Nothing here writes
the split's row: its lock is what tells a store that a change is in progress.)

Storing takes a share lock on the split's row without waiting (``FOR SHARE SKIP LOCKED``) and
stores only while the version is still the one computed for: a change in progress holds the
row (its update; it will send its own task), a committed one changed the version; either way
the numbers are dropped, never written over newer ones. Two stores of one split share the
lock; the rows are written by insert-or-update on (split, setting, dimension), so each writes
whole rows and the last one's stand.
"""

from __future__ import annotations

import functools
import json
import logging
import time
import uuid
import zlib
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from leaderboard import board_store
from leaderboard.entries import Place
from leaderboard.models import RankedBoard, RankedSlices, Split
from leaderboard.slice_statistics import (
    SliceStatistics,
    SliceValue,
    Units,
    board_units,
    slice_statistics,
)

logger = logging.getLogger("podium")
STORED = ("results_version", "statistics", "seconds")
# ``Place._make`` without its Python frame: 13,000 places (1,000 entries x 13 values) in ~2 ms
_place = functools.partial(tuple.__new__, Place)
# what one computation gives: (setting, dimension) -> (its statistics, the seconds it took)
Computed = dict[tuple[str, str], tuple[SliceStatistics, float]]


def encoded(found: SliceStatistics) -> bytes:
    """``found`` as ``RankedSlices.statistics``: compressed JSON, per value its statistics,
    its places' runs and their ``Place`` fields column by column (a tenth of the time a
    1,000-entry dimension takes to read as one JSON row per place)."""
    values = {}
    for value, there in found.values.items():
        columns = [list(column) for column in zip(*there.places.values(), strict=True)]
        values[value] = {
            "statistics": there.statistics,
            "runs": list(there.places),
            "places": columns or [[] for _ in Place._fields],
        }
    data = {"unavailable": found.unavailable, "values": values}
    return zlib.compress(json.dumps(data, separators=(",", ":")).encode(), 1)


def decoded(dimension: str, stored: bytes) -> SliceStatistics:
    """The ``SliceStatistics`` of ``dimension`` that ``encoded`` stored."""
    data = json.loads(zlib.decompress(stored))
    values = {
        value: SliceValue(
            dict(zip(there["runs"], map(_place, zip(*there["places"], strict=True)), strict=True)),
            there["statistics"],
        )
        for value, there in data["values"].items()
    }
    return SliceStatistics(dimension, values, data["unavailable"])


def _computed(
    split: Split, setting: str, dimension: str, units: Units | str | None = None
) -> tuple[SliceStatistics, float]:
    started = time.perf_counter()
    found = slice_statistics(split, setting, dimension, units)
    return found, time.perf_counter() - started


def read(split: Split, setting: str, dimension: str) -> SliceStatistics:
    """The statistics of ``dimension`` on the board of ``split`` in ``setting`` for the
    split's ``results_version``: stored, else computed now (and stored). Read from the row
    every time, not kept in the fragment cache: unpickling its places costs as much."""
    row = (
        RankedSlices.objects.filter(
            split=split,
            setting=setting,
            dimension=dimension,
            results_version=split.results_version,
        )
        .values_list("statistics", flat=True)
        .first()
    )
    if row is not None:
        return decoded(dimension, bytes(row))
    computed = _computed(split, setting, dimension)
    _store(split.pk, split.results_version, {(setting, dimension): computed})
    return computed[0]


def store_all(split_id: int, results_version: str) -> dict[str, Any]:
    """Compute and store every dimension's statistics of every setting's board of the split
    for ``results_version``; nothing when that is no longer its version. Rows of other
    versions (dimensions or settings its boards no longer have) go."""
    split = (
        Split.objects.filter(pk=split_id, results_version=results_version)
        .select_related("task")
        .first()
    )
    if split is None:
        return {"stored": 0, "why": "the split's results changed since, or it went"}
    computed: Computed = {}
    for setting in split.task.run_settings():
        units = board_units(split, setting)  # read once for all of its dimensions
        for dimension in board_store.stored(split, setting).dimensions:
            computed[setting, dimension] = _computed(split, setting, dimension, units)
    if not _store(split.pk, split.results_version, computed, prune=True):
        return {"stored": 0, "why": "the split's results changed while they were computed"}
    return {"stored": len(computed), "seconds": round(sum(t for _, t in computed.values()), 3)}


def _store(
    split_id: int, version: uuid.UUID | str, computed: Computed, prune: bool = False
) -> bool:
    """Store ``computed`` for ``version`` if it is still the split's and no change holds the
    split's row; with ``prune``, remove the split's rows of other versions. Whether it did."""
    with transaction.atomic(), connection.cursor() as cursor:
        # a share lock, not waiting: a change in progress (its update holds the row) makes
        # this skip it; another store of the split shares it
        cursor.execute(
            f"SELECT 1 FROM {Split._meta.db_table} WHERE id = %s AND results_version = %s "
            "FOR SHARE SKIP LOCKED",
            [split_id, uuid.UUID(str(version))],
        )
        if cursor.fetchone() is None:
            return False
        rows = [
            RankedSlices(
                split_id=split_id,
                setting=setting,
                dimension=dimension,
                results_version=version,
                statistics=encoded(found),
                seconds=seconds,
            )
            for (setting, dimension), (found, seconds) in computed.items()
        ]
        RankedSlices.objects.bulk_create(
            rows,
            update_conflicts=True,
            unique_fields=["split", "setting", "dimension"],
            update_fields=STORED,
        )
        if prune:
            RankedSlices.objects.filter(split_id=split_id).exclude(results_version=version).delete()
    return True


def resend_waiting(now: datetime | None = None) -> list[int]:
    """Send the task again for every split whose per-slice statistics were due longer than
    ``PODIUM_UNCLAIMED_RESEND_S`` ago and have no stored row for its version while a board of
    it has slice dimensions (the message lost: the broker restarted without it, or a worker
    died with it); each is due again from now."""
    now = now or timezone.now()
    cutoff = now - timedelta(seconds=settings.PODIUM_UNCLAIMED_RESEND_S)
    stored = RankedSlices.objects.filter(
        split=OuterRef("pk"), results_version=OuterRef("results_version")
    )
    sliced = RankedBoard.objects.filter(split=OuterRef("pk")).exclude(dimensions=[])
    waiting = Split.objects.filter(slice_statistics_due_at__lt=cutoff).filter(
        Exists(sliced), ~Exists(stored)
    )
    resent = []
    for split_id, version in waiting.values_list("pk", "results_version"):
        # due again from now (an update of the split: at most once per limit, rarely)
        again = Split.objects.filter(pk=split_id, results_version=version)
        if again.filter(slice_statistics_due_at__lt=cutoff).update(slice_statistics_due_at=now):
            logger.warning("split #%s: slice statistics not stored; sending again", split_id)
            board_store.send_slice_statistics(split_id, version)
            resent.append(split_id)
    return resent
