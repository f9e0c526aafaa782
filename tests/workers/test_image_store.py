"""A node lacking a submission's image waits for the node that made it to store it (the build
stage stores it after handing the run over), within PODIUM_IMAGE_STORE_WAIT_S."""

from __future__ import annotations

import threading
import time

import pytest

from leaderboard.kits import store
from workers.image_export import archive_name
from workers.pipeline import image_store

DIGEST = "sha256:" + "ab" * 32


@pytest.fixture
def media(settings, tmp_path):
    settings.VAR_DIR = tmp_path / "var"
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {
            "BACKEND": "django.core.files.storage.FileSystemStorage",
            "OPTIONS": {"location": str(tmp_path / "media"), "base_url": None},
        },
    }
    return tmp_path


def test_an_archive_stored_meanwhile_is_waited_for(media, settings) -> None:
    settings.PODIUM_IMAGE_STORE_WAIT_S = 30
    writer = threading.Timer(
        1.0, store.store_once, (archive_name(DIGEST), lambda out: out.write(b"layers"))
    )
    writer.start()
    started = time.monotonic()
    archive = image_store._awaited(DIGEST)
    writer.join()
    assert archive is not None and archive.size == len(b"layers")
    assert 0.9 <= time.monotonic() - started < 10


def test_the_wait_ends_when_nothing_comes(media, settings) -> None:
    settings.PODIUM_IMAGE_STORE_WAIT_S = 1
    started = time.monotonic()
    assert image_store._awaited(DIGEST) is None
    assert 0.9 <= time.monotonic() - started < 5


def test_a_pulled_image_is_never_waited_for(media, settings) -> None:
    settings.PODIUM_IMAGE_STORE_WAIT_S = 30
    started = time.monotonic()
    assert image_store._awaited("registry.example/team/agent@sha256:" + "cd" * 32) is None
    assert time.monotonic() - started < 1
