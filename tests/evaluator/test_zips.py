"""Zip archives, read safely (``evaluator.zips``): limits checked from the central directory
before anything is written, headers that lie about sizes, a directory too large to parse."""

from __future__ import annotations

import struct
import zipfile
from pathlib import Path

import pytest

from evaluator.archives import ArchiveError, ArchiveLimits
from evaluator.zips import TooLarge, extract_zip, open_zip

MiB = 1024 * 1024


def _zip(path: Path, entries: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
    return path


def test_entries_past_the_ratio_are_refused_before_anything_is_written(tmp_path):
    bomb = _zip(tmp_path / "b.zip", {"a.txt": b"hello", "zeros": bytes(80 * MiB)})
    limits = ArchiveLimits(max_ratio=100)
    with pytest.raises(ArchiveError) as raised:
        extract_zip(bomb, tmp_path / "t", limits)
    assert str(raised.value) == (
        "entry 'zeros': the archive unpacks to more than 67108864 bytes (what an archive of "
        f"{bomb.stat().st_size} bytes may: 100 times its size, never under 67108864)"
    )
    assert not (tmp_path / "t").exists()
    extract_zip(bomb, tmp_path / "ok", ArchiveLimits())  # no ratio: it unpacks
    assert (tmp_path / "ok" / "zeros").stat().st_size == 80 * MiB


def test_an_entry_that_inflates_past_its_declared_size_is_cut_there(tmp_path):
    """The sizes in a zip's headers may lie: no more than the declared bytes are written."""
    path = _zip(tmp_path / "b.zip", {"zeros": bytes(4 * MiB)})
    data = bytearray(path.read_bytes())
    for signature, offset in ((b"PK\x03\x04", 22), (b"PK\x01\x02", 24)):  # local, central
        at = data.index(signature) + offset
        data[at : at + 4] = struct.pack("<I", 1000)
    path.write_bytes(bytes(data))
    with pytest.raises(ArchiveError, match=r"entry .zeros.: damaged"):
        extract_zip(path, tmp_path / "t", ArchiveLimits(max_bytes=MiB))
    assert (tmp_path / "t" / "zeros").stat().st_size <= 1000
    with open_zip(path, ArchiveLimits()) as reader, pytest.raises(TooLarge):
        reader.read("zeros", 999)


def test_a_central_directory_past_the_member_limit_is_refused_unparsed(tmp_path):
    path = _zip(tmp_path / "b.zip", {f"{'x' * 200}{i}": b"" for i in range(300)})
    with pytest.raises(ArchiveError, match=r"^more than 10 entries$"):
        extract_zip(path, tmp_path / "t", ArchiveLimits(max_members=10))
    data = bytearray(path.read_bytes())
    end = data.rindex(b"PK\x05\x06")
    data[end + 8 : end + 12] = struct.pack("<HH", 1, 1)  # its end record claims one entry
    path.write_bytes(bytes(data))
    with pytest.raises(ArchiveError, match=r"^a central directory of \d+ bytes: more than 10"):
        extract_zip(path, tmp_path / "t", ArchiveLimits(max_members=10))
    assert not (tmp_path / "t").exists()


def test_a_name_twice_is_refused_before_anything_is_written(tmp_path):
    path = tmp_path / "b.zip"
    with zipfile.ZipFile(path, "w") as archive, pytest.warns(UserWarning):
        archive.writestr("a", b"1")
        archive.writestr("a", b"2")
    with pytest.raises(ArchiveError, match="entry 'a' appears twice"):
        extract_zip(path, tmp_path / "t", ArchiveLimits())
    assert not (tmp_path / "t").exists()
