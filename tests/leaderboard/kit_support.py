"""Fixtures for the starter kit tests: a challenge with three imported splits and a corpus."""

from __future__ import annotations

import io
import tarfile
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from leaderboard.models import Challenge, Split
from leaderboard.pipeline.bundles import store_corpus
from leaderboard.splits import import_split_dir

from .factories import write_small_split

PRIVATE_QUERY_MARK = "private-only"


@pytest.fixture
def kit_settings(settings, tmp_path):
    settings.VAR_DIR = tmp_path / "var"  # build locks
    return settings


def write_corpus(directory: Path) -> Path:
    (directory / "images").mkdir(parents=True)
    (directory / "images.jsonl").write_text(
        '{"image": "images/a.jpg", "url": "https://example.org/a.jpg", "entities": []}\n'
    )
    (directory / "web.jsonl").write_text(
        '{"page_url": "https://example.org", "page_name": "n", "page_snippet": "s", "text": "t"}\n'
    )
    (directory / "images" / "a.jpg").write_bytes(b"\xff\xd8 not really a jpeg")
    return directory


@pytest.fixture
def kit_challenge(kit_settings, challenge, task, tmp_path) -> Challenge:
    """The conftest's challenge: validation (3 conversations), public test (2) and a private
    test (1, revealed in a week, its queries marked) imported; a search corpus stored."""
    for kind, conversations in (("validation", 3), ("public-test", 2)):
        import_split_dir(task, kind, write_small_split(tmp_path / kind, conversations))
    private = write_small_split(tmp_path / "private", 1)
    sessions = private / "sessions.jsonl"
    sessions.write_text(sessions.read_text().replace("What is shown", PRIVATE_QUERY_MARK))
    import_split_dir(
        task, Split.Kind.PRIVATE_TEST, private, reveal_at=timezone.now() + timedelta(days=7)
    )
    store_corpus(challenge, write_corpus(tmp_path / "corpus"))
    return challenge


def kit_members(body: bytes) -> dict[str, bytes]:
    """A downloaded kit's regular files by name (the top folder dropped)."""
    members = {}
    with tarfile.open(fileobj=io.BytesIO(body), mode="r:gz") as tar:
        for member in tar:
            if member.isfile():
                members[member.name.split("/", 1)[1]] = tar.extractfile(member).read()
    return members


def body_of(response) -> bytes:
    return b"".join(response.streaming_content)
