"""Fixtures and archive builders shared by the submission, quota and CLI tests."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest
from django.core.files.storage import default_storage

from leaderboard.models import Split
from tests.services import redis_url

from .broker import broker_at

BROKER = redis_url("submit")  # tests/services.py: its own database, emptied around each test


@pytest.fixture
def broker():
    """Stage tasks sent on commit land in a Redis database of these tests."""
    with broker_at(BROKER) as client:
        yield client


@pytest.fixture
def open_splits(splits) -> dict[str, Split]:
    """The conftest's three splits, with data imported (a bundle name and a turn count)."""
    for split in splits.values():
        split.bundle.name = f"splits/{split.kind}.tar"
        split.items = 12
        split.save(update_fields=["bundle", "items"])
    return splits


def write_tar(
    path: Path,
    members: dict[str, bytes],
    *,
    compression: str = "",
    links: dict[str, str] | None = None,
) -> Path:
    """A tar at ``path`` holding ``members`` (name -> bytes) and symlinks (name -> target)."""
    mode = f"w:{compression}" if compression else "w"
    with tarfile.open(path, mode) as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
        for name, target in (links or {}).items():
            info = tarfile.TarInfo(name)
            info.type, info.linkname = tarfile.SYMTYPE, target
            archive.addfile(info)
    return path


def image_archive(path: Path, **kwargs) -> Path:
    """A small tar shaped like ``docker save`` output (manifest.json and a layer)."""
    manifest = b'[{"Config": "c.json", "RepoTags": ["team/agent:1"], "Layers": ["l/layer.tar"]}]'
    members = {"manifest.json": manifest, "c.json": b"{}", "l/layer.tar": b"\0" * 1024}
    return write_tar(path, members, **kwargs)


def build_context(path: Path, **kwargs) -> Path:
    members = {"Dockerfile": b"FROM podium/agent-base:py3.11\nCOPY agent.py /agent/\n"}
    members["agent.py"] = b"class Agent: ...\n"
    return write_tar(path, members, **kwargs)


def stored_under(prefix: str) -> set[str]:
    """Every file in Podium's storage below ``prefix`` (none when it does not exist)."""
    found: set[str] = set()

    def walk(where: str) -> None:
        dirs, files = default_storage.listdir(where)
        found.update(f"{where}/{name}" for name in files)
        for name in dirs:
            walk(f"{where}/{name}")

    if default_storage.exists(prefix):
        walk(prefix)
    return found
