"""Safe extraction: hostile archives on the old code path (Podium's checks alone, as on Debian
bookworm's Python 3.11.2) and, where the standard library has it, the new one
(``tarfile.data_filter`` as a second opinion)."""

from __future__ import annotations

import io
import os
import random
import re
import stat
import tarfile
from pathlib import Path

import pytest

from evaluator import archives
from evaluator.archives import ArchiveError, ArchiveLimits, extract_tar, member_problem

REPO = Path(__file__).resolve().parents[2]
PATHS = ["own checks only"] + (["with data_filter"] if hasattr(tarfile, "data_filter") else [])


@pytest.fixture(params=PATHS)
def code_path(request, monkeypatch):
    """Each test runs on every code path this Python has. On the old one, tarfile's own
    extraction is made unusable, as it is (with ``filter=``) on 3.11.2."""
    if request.param == "own checks only":
        monkeypatch.setattr(archives, "_DATA_FILTER", None)

        def refuse(*args, **kwargs):
            raise TypeError("tarfile extraction is not to be used")

        monkeypatch.setattr(tarfile.TarFile, "extractall", refuse)
        monkeypatch.setattr(tarfile.TarFile, "extract", refuse)
    return request.param


def _member(name: str, kind: bytes = tarfile.REGTYPE, link: str = "", data: bytes = b""):
    info = tarfile.TarInfo(name)
    info.type, info.linkname, info.size = kind, link, len(data) if kind == tarfile.REGTYPE else 0
    info.mode = 0o644 if kind != tarfile.DIRTYPE else 0o755
    return info, (io.BytesIO(data) if kind == tarfile.REGTYPE else None)


def tar_bytes(*members, mode: str = "w") -> bytes:
    """An archive of ``(name, kind, link, data)`` members, in order (tarfile writes anything)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode=mode, format=tarfile.PAX_FORMAT) as tar:
        for spec in members:
            info, data = _member(*spec) if isinstance(spec, tuple) else (spec, None)
            tar.addfile(info, data)
    return buffer.getvalue()


@pytest.fixture
def box(tmp_path):
    """``(target, outside)``: where the archive unpacks, and a sibling it must never touch."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_text("do not read")
    return tmp_path / "target", outside


def untouched(outside: Path) -> bool:
    return sorted(p.name for p in outside.iterdir()) == ["secret"]


SYM, LNK, DIR, REG = tarfile.SYMTYPE, tarfile.LNKTYPE, tarfile.DIRTYPE, tarfile.REGTYPE


def test_a_good_archive_unpacks_with_dirs_links_and_modes(code_path, tmp_path):
    data = tar_bytes(
        ("split", DIR),
        ("split/sessions.jsonl", REG, "", b'{"a": 1}\n'),
        ("split/images/a.jpg", REG, "", b"jpeg"),
        ("split/images/b.jpg", SYM, "a.jpg"),
        ("split/copy.jpg", LNK, "split/images/a.jpg"),
        ("./split/run.sh", REG, "", b"#!/bin/sh\n"),
    )
    target = tmp_path / "t"
    extract_tar(io.BytesIO(data), target)
    assert (target / "split/sessions.jsonl").read_bytes() == b'{"a": 1}\n'
    assert (target / "split/images/b.jpg").read_bytes() == b"jpeg"
    assert os.readlink(target / "split/images/b.jpg") == "a.jpg"
    assert (target / "split/copy.jpg").read_bytes() == b"jpeg"
    assert stat.S_IMODE((target / "split/sessions.jsonl").stat().st_mode) == 0o644


@pytest.mark.parametrize("compression", ["gz", "bz2", "xz"])
def test_compressed_archives_unpack_from_a_path(code_path, tmp_path, compression):
    path = tmp_path / f"a.tar.{compression}"
    path.write_bytes(tar_bytes(("x/y.txt", REG, "", b"hello"), mode=f"w:{compression}"))
    extract_tar(path, tmp_path / "t")
    assert (tmp_path / "t/x/y.txt").read_text() == "hello"


def test_ownership_times_and_special_bits_are_not_taken_from_the_archive(code_path, tmp_path):
    info, _ = _member("tool", REG, "", b"x")
    info.mode, info.uid, info.gid, info.mtime = 0o6777, 4242, 4242, 0
    extract_tar(io.BytesIO(tar_bytes(info)), tmp_path / "t")
    result = (tmp_path / "t/tool").stat()
    assert stat.S_IMODE(result.st_mode) == 0o755  # executable kept, setuid/setgid/world-w not
    assert (result.st_uid, result.st_gid) == (os.getuid(), os.getgid())
    assert result.st_mtime > 0


HOSTILE = {
    "parent path": ([("../evil", REG, "", b"x")], "'../evil' is a path leading outside"),
    "nested parent path": (
        [("a/../../evil", REG, "", b"x")],
        "'a/../../evil' is a path leading outside",
    ),
    "absolute path": ([("/tmp/evil", REG, "", b"x")], "'/tmp/evil' is an absolute path"),
    "symlink to an absolute path": (
        [("l", SYM, "/etc")],
        "'l' is a link to the absolute path '/etc'",
    ),
    "symlink out": ([("d/l", SYM, "../../outside")], "'d/l' is a link to '../../outside'"),
    "hard link out": ([("h", LNK, "../outside/secret")], "'h' is a link to '../outside/secret'"),
    "hard link to an absolute path": (
        [("h", LNK, "/etc/passwd")],
        "'h' is a link to the absolute path",
    ),
    "symlink chain walking out": (
        [("d", DIR), ("d/l", SYM, ".."), ("d/l/l2", SYM, "..")],
        "'d/l/l2'",
    ),
    "file written through a symlink chain": (
        [("d", DIR), ("d/l", SYM, ".."), ("d/l/e", SYM, "../outside"), ("d/l/e/new", REG)],
        "'d/l/e'",
    ),
    "link made to point out by a later link": (
        [("a", SYM, "p/.."), ("p", SYM, ".")],
        "'a' is a link leading outside the archive through a link",
    ),
    "file written through a link that points out later": (
        [("a", SYM, "p/.."), ("p", SYM, "."), ("a/outside/new", REG, "", b"x")],
        "'a/outside/new' is a path leading outside the archive through a link",
    ),
    "character device": ([("dev", tarfile.CHRTYPE)], "'dev' is a device or pipe"),
    "block device": ([("blk", tarfile.BLKTYPE)], "'blk' is a device or pipe"),
    "fifo": ([("fifo", tarfile.FIFOTYPE)], "'fifo' is a device or pipe"),
    "hard link to nothing": ([("h", LNK, "missing")], "'h' links to 'missing', no file"),
    "file twice": ([("x", REG, "", b"1"), ("x", REG, "", b"2")], "'x' appears twice"),
    "file over a symlink": (
        [("x", REG, "", b"1"), ("l", SYM, "x"), ("l", REG, "", b"2")],
        "'l' appears twice",
    ),
}


@pytest.mark.parametrize("case", HOSTILE, ids=list(HOSTILE))
def test_hostile_archives_are_refused_naming_the_entry(code_path, box, case):
    members, expected = HOSTILE[case]
    target, outside = box
    with pytest.raises(ArchiveError) as refused:
        extract_tar(io.BytesIO(tar_bytes(*members)), target)
    message = str(refused.value)
    if code_path == "with data_filter" and "is refused" in message:
        # The standard library spotted it first; it names the entry too.
        assert re.search(r"entry '[^']+' is refused", message), message
    else:
        assert expected in message, message
    assert untouched(outside)
    assert not (target.parent / "evil").exists()
    assert (target / "x").read_bytes() == b"1" if case == "file twice" else True


def test_member_count_limit(code_path, tmp_path):
    data = tar_bytes(*[(f"f{i}", REG, "", b"") for i in range(11)])
    extract_tar(io.BytesIO(data), tmp_path / "ok", ArchiveLimits(max_members=11))
    with pytest.raises(ArchiveError, match="more than 10 entries"):
        extract_tar(io.BytesIO(data), tmp_path / "no", ArchiveLimits(max_members=10))
    assert len(list((tmp_path / "no").iterdir())) == 10


def test_a_compression_bomb_stops_at_the_byte_limit(code_path, tmp_path):
    limit = 4 * 1024 * 1024
    bomb = tar_bytes(("zeros", REG, "", bytes(64 * 1024 * 1024)), mode="w:gz")
    assert len(bomb) < 200_000
    with pytest.raises(ArchiveError, match=r"'zeros': the archive unpacks to more than 4194304"):
        extract_tar(io.BytesIO(bomb), tmp_path / "t", ArchiveLimits(max_bytes=limit))
    assert not (tmp_path / "t/zeros").exists()  # refused at its header, nothing written


def test_hard_link_copies_count_toward_the_byte_limit(code_path, tmp_path):
    data = tar_bytes(("a", REG, "", bytes(600)), ("b", LNK, "a"))
    with pytest.raises(ArchiveError, match="'b': the archive unpacks to more than 1000"):
        extract_tar(io.BytesIO(data), tmp_path / "t", ArchiveLimits(max_bytes=1000))


@pytest.mark.parametrize(
    "content, why",
    [
        (b"", "not a usable tar archive"),
        (b"this is not a tar archive at all" * 40, "not a usable tar archive"),
        (
            tar_bytes(("a", REG, "", random.Random(0).randbytes(50_000)), mode="w:gz")[:20_000],
            "'a': not a usable tar",
        ),
    ],
    ids=["empty", "garbage", "truncated gzip"],
)
def test_damaged_archives_are_refused(code_path, tmp_path, content, why):
    with pytest.raises(ArchiveError, match=why):
        extract_tar(io.BytesIO(content), tmp_path / "t")


def test_member_problem_allows_links_that_stay_inside():
    assert member_problem(_member("a/b", SYM, "../c")[0]) is None
    assert member_problem(_member("a/b", LNK, "a/c")[0]) is None
    assert (
        member_problem(_member("a/b", SYM, "../../c")[0])
        == "a link to '../../c', outside the archive"
    )


def test_nothing_else_in_podium_unpacks_archives():
    """One function unpacks: nobody calls tarfile's extraction (or shutil's) directly."""
    callers = []
    for folder in ("evaluator", "agentkit", "workers", "leaderboard", "podium", "bench"):
        for path in (REPO / folder).rglob("*.py"):
            text = path.read_text()
            if re.search(r"\.extractall\(|\bunpack_archive\(|\.extract\((?!file)", text):
                callers.append(str(path.relative_to(REPO)))
    assert callers == []
