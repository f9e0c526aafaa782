"""The retention of agent images' archives: removed once no run of their submissions may start
or resume and the grace has passed; never while a run is starting (row locks); idempotent."""

from __future__ import annotations

import logging
import threading
import time
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from leaderboard import image_retention
from leaderboard.kits import store
from leaderboard.models import EvaluationRun, ImageArchive
from leaderboard.pipeline import image_store
from workers.image_export import archive_name

pytestmark = pytest.mark.django_db
State = EvaluationRun.State
Kept = ImageArchive.State
DAY = timedelta(days=1)


def digest(n: int) -> str:
    return f"sha256:{n:064x}"


@pytest.fixture
def archives(settings, tmp_path):
    """``archives(n, stored_ago)``: image ``n``'s archive in storage, recorded as stored."""
    settings.VAR_DIR = tmp_path / "var"
    settings.PODIUM_IMAGE_STORE_KEEP_S = 3600

    def make(n: int, stored_ago: timedelta = 2 * DAY) -> str:
        store.store_once(archive_name(digest(n)), lambda out: out.write(b"x" * (1000 + n)))
        ImageArchive.objects.create(
            image_id=digest(n),
            state=Kept.STORED,
            size=1000 + n,
            stored_at=timezone.now() - stored_ago,
        )
        return digest(n)

    return make


def finished(run: EvaluationRun, ago: timedelta) -> EvaluationRun:
    EvaluationRun.objects.filter(pk=run.pk).update(finished_at=timezone.now() - ago)
    run.refresh_from_db()
    return run


def test_only_archives_no_run_needs_go_and_the_sweep_logs_what_it_freed(
    archives, pipeline_run, caplog, monkeypatch
):
    monkeypatch.setattr(logging.getLogger("podium"), "propagate", True)  # to caplog
    done_long_ago = archives(1)
    finished(pipeline_run(State.DONE, image_digest=done_long_ago), 2 * DAY)
    queued = archives(2)
    pipeline_run(State.QUEUED, image_digest=queued)
    running = archives(3)
    pipeline_run(State.RUNNING, image_digest=running)
    judging = archives(4)  # judged now; may be re-queued: kept until it finishes
    pipeline_run(State.JUDGING, image_digest=judging)
    done_recently = archives(5)
    finished(pipeline_run(State.DONE, image_digest=done_recently), timedelta(minutes=5))
    shared = archives(6)  # two submissions of one image: one of them still runs
    finished(pipeline_run(State.DONE, image_digest=shared), 2 * DAY)
    pipeline_run(State.QUEUED, image_digest=shared)
    fresh = archives(7, stored_ago=timedelta(minutes=5))  # stored again (a re-run) just now
    failed = pipeline_run(State.RUNNING, image_digest=fresh)
    failed.move_to(State.FAILED)
    finished(failed, 2 * DAY)
    # the starter kit's base image: an archive without a record is never touched
    store.store_once(archive_name(digest(8)), lambda out: out.write(b"base"))

    with caplog.at_level(logging.INFO, logger="podium"):
        swept = image_retention.sweep()

    assert swept.removed == [done_long_ago] and swept.freed_bytes == 1001
    assert image_store.stored(done_long_ago) is None
    for kept in (queued, running, judging, done_recently, shared, fresh, digest(8)):
        assert image_store.stored(kept) is not None, kept
    record = ImageArchive.objects.get(image_id=done_long_ago)
    assert (record.state, record.swept_at is not None) == (Kept.GONE, True)
    assert f"image archive of {done_long_ago} removed (1001 bytes)" in caplog.text
    assert "1 removed, 0.0 MB freed" in caplog.text

    again = image_retention.sweep()  # idempotent
    assert again.removed == [] and again.freed_bytes == 0


def test_the_grace_is_the_setting(archives, pipeline_run, settings):
    image = archives(1)
    finished(pipeline_run(State.DONE, image_digest=image), timedelta(minutes=30))
    assert image_retention.sweep().removed == []
    settings.PODIUM_IMAGE_STORE_KEEP_S = 600
    assert image_retention.sweep().removed == [image]


def test_an_archive_owed_that_no_run_needs_is_owed_by_nobody(archives, pipeline_run):
    """Its node may be gone for good: a node that has the image owes it at its next run."""
    finished(pipeline_run(State.DONE, image_digest=digest(1)), 2 * DAY)
    pipeline_run(State.RUNNING, image_digest=digest(2))
    for n in (1, 2):
        ImageArchive.objects.create(image_id=digest(n), node="node-gone")
    assert image_retention.sweep().settled == 1
    states = dict(ImageArchive.objects.values_list("image_id", "state"))
    assert states == {digest(1): Kept.GONE, digest(2): Kept.PENDING}


def test_images_stored_before_records_were_kept_are_adopted_with_a_fresh_grace(
    archives, pipeline_run, settings
):
    store.store_once(archive_name(digest(1)), lambda out: out.write(b"legacy"))
    finished(pipeline_run(State.DONE, image_digest=digest(1)), 2 * DAY)
    finished(pipeline_run(State.DONE, image_digest=digest(2)), 2 * DAY)  # never stored
    swept = image_retention.sweep()
    assert (swept.adopted, swept.removed) == (2, [])
    states = dict(ImageArchive.objects.values_list("image_id", "state"))
    assert states == {digest(1): Kept.STORED, digest(2): Kept.GONE}
    later = timezone.now() + timedelta(seconds=settings.PODIUM_IMAGE_STORE_KEEP_S + 1)
    assert image_retention.sweep(now=later).removed == [digest(1)]


@pytest.mark.django_db(transaction=True)
def test_a_run_starting_during_the_sweep_waits_for_it_and_then_finds_the_archive_gone(
    archives, pipeline_run, monkeypatch, settings
):
    """The sweep holds the runs' rows from its last look until the archive is gone: a re-run
    (done -> queued) committed meanwhile waits, and its stage does not wait for the archive."""
    image = archives(1)
    run = finished(pipeline_run(State.DONE, image_digest=image), 2 * DAY)
    inside, proceed = threading.Event(), threading.Event()
    remove = image_retention._remove

    def slow_remove(record):
        inside.set()
        assert proceed.wait(30)
        remove(record)

    monkeypatch.setattr(image_retention, "_remove", slow_remove)
    sweeper = threading.Thread(target=lambda: (image_retention.sweep(), connection.close()))
    sweeper.start()
    assert inside.wait(30)
    moved = threading.Event()

    def rerun():
        EvaluationRun.objects.get(pk=run.pk).move_to(State.QUEUED)
        moved.set()
        connection.close()

    mover = threading.Thread(target=rerun)
    mover.start()
    assert not moved.wait(1.0), "the run moved while the sweep held its row"
    proceed.set()
    sweeper.join(30)
    mover.join(30)
    assert moved.is_set()
    run.refresh_from_db()
    assert run.state == State.QUEUED
    assert ImageArchive.objects.get(image_id=image).state == Kept.GONE
    settings.PODIUM_IMAGE_STORE_WAIT_S = 30
    started = time.monotonic()
    assert image_store._awaited(image) is None, "swept: nobody owes it"
    assert time.monotonic() - started < 1


def test_a_run_started_before_the_sweeps_last_look_keeps_the_archive(
    archives, pipeline_run, monkeypatch
):
    """Due when listed, re-queued before the sweep locks it: read again under the locks."""
    image = archives(1)
    run = finished(pipeline_run(State.DONE, image_digest=image), 2 * DAY)
    listed = image_retention.due

    def due_then_rerun(cutoff):
        found = listed(cutoff)
        EvaluationRun.objects.get(pk=run.pk).move_to(State.QUEUED)
        return found

    monkeypatch.setattr(image_retention, "due", due_then_rerun)
    assert image_retention.sweep().removed == []
    assert image_store.stored(image) is not None
    assert ImageArchive.objects.get(image_id=image).state == Kept.STORED


def test_beat_sweeps_with_the_registered_task():
    from podium.celery import app

    entry = app.conf.beat_schedule["sweep-image-archives"]
    app.loader.import_default_modules()
    assert app.tasks[entry["task"]].name == "housekeeping.sweep_image_archives"
