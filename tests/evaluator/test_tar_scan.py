"""The upload check in its child process: what it finds, and the limits it is held to."""

from __future__ import annotations

import hashlib
import io
import os
import tarfile
import time

import pytest

from evaluator.archives import ArchiveLimits
from evaluator.tar_scan import Refusal, scan_file

LIMITS = ArchiveLimits(max_members=100, max_bytes=10_000)


def _tar(path, members: dict[str, bytes], mode: str = "w"):
    with tarfile.open(path, mode) as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return path


@pytest.mark.parametrize("mode, compression", [("w", ""), ("w:gz", "gz"), ("w:xz", "xz")])
def test_a_good_archive_is_hashed_and_its_compression_named(tmp_path, mode, compression):
    path = _tar(tmp_path / "a.tar", {"Dockerfile": b"FROM x\n", "agent.py": b"x = 1\n"}, mode)
    scan = scan_file(path, LIMITS, "Dockerfile")
    assert scan.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert (scan.size, scan.compression, scan.has_required) == (
        path.stat().st_size,
        compression,
        True,
    )
    assert not scan_file(path, LIMITS, "manifest.json").has_required


@pytest.mark.parametrize(
    "members, code, entry",
    [
        ({"../x": b""}, "unsafe_member", "../x"),
        ({f"f{i}": b"" for i in range(101)}, "over_budget", "f100"),
        ({"big": bytes(10_001)}, "over_budget", "big"),
    ],
)
def test_refusals_come_back_as_data(tmp_path, members, code, entry):
    with pytest.raises(Refusal) as refused:
        scan_file(_tar(tmp_path / "a.tar", members), LIMITS, "Dockerfile")
    assert (refused.value.code, refused.value.entry) == (code, entry)


def test_garbage_is_not_a_tar(tmp_path):
    path = tmp_path / "a.tar"
    path.write_bytes(b"not a tar" * 100)
    with pytest.raises(Refusal) as refused:
        scan_file(path, LIMITS, "Dockerfile")
    assert refused.value.code == "not_tar"


def test_the_child_is_held_to_its_wall_time(tmp_path):
    fifo = tmp_path / "never"
    os.mkfifo(fifo)  # opening it blocks forever: no writer ever comes
    started = time.monotonic()
    with pytest.raises(Refusal) as refused:
        scan_file(fifo, LIMITS, "Dockerfile", timeout_s=1)
    assert refused.value.code == "over_limits" and time.monotonic() - started < 5


def test_the_child_is_held_to_its_memory(tmp_path):
    path = _tar(tmp_path / "a.tar", {"Dockerfile": b"FROM x\n"})
    with pytest.raises(Refusal) as refused:
        scan_file(path, LIMITS, "Dockerfile", memory_bytes=8 * 1024 * 1024)
    assert refused.value.code == "over_limits"


def test_the_top_level_dockerfile_comes_back_as_text(tmp_path, monkeypatch):
    first = b"\xef\xbb\xbfFROM podium/agent-base:py3.11\n"
    members = {"sub/Dockerfile": b"FROM a\n", "./Dockerfile": first, "Dockerfile": b"FROM b\n"}
    scan = scan_file(_tar(tmp_path / "a.tar.gz", members, "w:gz"), LIMITS, "Dockerfile")
    assert scan.dockerfile == "\ufeffFROM podium/agent-base:py3.11\n"  # the first, as builds read
    latin = _tar(tmp_path / "b.tar", {"Dockerfile": b"FROM caf\xe9\n"})
    assert scan_file(latin, LIMITS, "Dockerfile").dockerfile is None  # the build says why
    assert scan_file(_tar(tmp_path / "c.tar", {"x": b""}), LIMITS, "x").dockerfile is None
