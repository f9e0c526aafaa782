"""The image directory the runner keeps for an agent: content-addressed, one batch shown."""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from docker.types import Mount

from agentkit.protocol import IMAGE_DIR
from tests.workers.conftest import TEST_POLICY
from workers.image_volume import (
    ImageDirFull,
    ImageFile,
    ImageVolume,
    Stager,
    read_image,
)


def test_images_are_named_by_content_with_their_suffix(tmp_path):
    (tmp_path / "a.JPG").write_bytes(b"same bytes")
    (tmp_path / "b.jpg").write_bytes(b"same bytes")
    (tmp_path / "c.we ird").write_bytes(b"other")
    digest = hashlib.sha256(b"same bytes").hexdigest()
    assert read_image(tmp_path / "a.JPG") == ImageFile(f"{digest}.jpg", b"same bytes")
    assert read_image(tmp_path / "b.jpg").name == f"{digest}.jpg"
    assert read_image(tmp_path / "c.we ird").name == hashlib.sha256(b"other").hexdigest()


def test_stage_writes_a_hidden_directory_and_show_opens_it_and_closes_the_last(tmp_path):
    volume = ImageVolume(tmp_path)
    red, blue, green = (ImageFile(f"{c}.jpg", c.encode() * 100) for c in ("red", "blue", "green"))
    first = volume.stage([[red], [], [blue, green], [red]])  # green: two items, one file
    directory = tmp_path / first.directory
    assert sorted(p.name for p in directory.iterdir()) == ["blue.jpg", "green.jpg", "red.jpg"]
    assert (directory / "red.jpg").read_bytes() == red.data
    assert stat.S_IMODE((directory / "red.jpg").stat().st_mode) == 0o444
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700  # staged: the agent cannot look in
    paths = volume.show(first)
    where = f"{IMAGE_DIR}/{first.directory}"
    assert paths == [
        [f"{where}/red.jpg"],
        [],
        [f"{where}/blue.jpg", f"{where}/green.jpg"],
        [f"{where}/red.jpg"],
    ]
    assert stat.S_IMODE(directory.stat().st_mode) == 0o755

    second = volume.stage([[red]])  # red's conversation goes on: linked, not written
    again = tmp_path / second.directory
    assert stat.S_IMODE(again.stat().st_mode) == 0o700
    assert (again / "red.jpg").stat().st_ino == (directory / "red.jpg").stat().st_ino
    volume.show(second)
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700  # the batch before: closed
    assert stat.S_IMODE(again.stat().st_mode) == 0o755

    third = volume.stage([[]])  # staging removes the batches before the shown one
    assert sorted(p.name for p in tmp_path.iterdir()) == [second.directory, third.directory]
    assert volume.show(third) == [[]]
    assert list((tmp_path / third.directory).iterdir()) == []


def test_the_stager_stages_the_upcoming_batch_on_its_own_thread(tmp_path):
    images = {n: ImageFile(f"{n}.png", n.encode()) for n in ("a", "b", "c")}
    threads = []

    def read(turn: str) -> list[ImageFile]:
        threads.append(threading.current_thread().name)
        return [images[turn]]

    volume, stager = ImageVolume(tmp_path), Stager(read)
    try:
        first, upcoming = ["a"], ["b", "c"]
        assert stager.show(volume, first)[0][0].endswith("/a.png")  # nothing ahead: staged now
        assert threads == [threading.current_thread().name]
        stager.stage_ahead(volume, upcoming)
        paths = stager.show(volume, upcoming)
        assert [p[0].rsplit("/", 1)[1] for p in paths] == ["b.png", "c.png"]
        assert threads[1:] == [threads[1]] * 2 and threads[1].startswith("podium-images")
        stager.stage_ahead(volume, ["a"])
        assert stager.show(volume, ["a"])[0][0].endswith("/a.png")  # another list: staged again
        assert threads[-1] == threading.current_thread().name
        stager.stage_ahead(volume, ["c"])
        stager.settle()  # dropped: nothing touches the volume from now on
        reads, entries = len(threads), sorted(os.listdir(tmp_path))
        time.sleep(0.05)
        assert (len(threads), sorted(os.listdir(tmp_path))) == (reads, entries)
    finally:
        stager.close()


def test_staging_ahead_holds_off_until_its_time_or_until_the_batch_is_shown(tmp_path):
    reads: list[tuple[str, float]] = []

    def read(turn: str) -> list[ImageFile]:
        reads.append((turn, time.monotonic()))
        return [ImageFile(f"{turn}.png", turn.encode())]

    volume, stager = ImageVolume(tmp_path), Stager(read)
    try:
        stager.show(volume, ["a"])
        asked = time.monotonic()
        stager.stage_ahead(volume, upcoming := ["b"], hold_off_s=0.2)
        time.sleep(0.05)
        assert [turn for turn, _ in reads] == ["a"], "held off: nothing read yet"
        assert stager.show(volume, upcoming)[0][0].endswith("/b.png")  # shown: staged at once
        assert reads[-1][0] == "b" and reads[-1][1] - asked < 0.15

        stager.stage_ahead(volume, later := ["c"], hold_off_s=0.05)
        time.sleep(0.15)  # the hold-off passes: staged while nobody waits
        assert reads[-1][0] == "c"
        assert stager.show(volume, later)[0][0].endswith("/c.png")
        assert [turn for turn, _ in reads].count("c") == 1

        stager.stage_ahead(volume, ["d"], hold_off_s=10)
        settled = time.monotonic()
        stager.settle()  # dropped while held off: never staged, and no wait for the hold-off
        assert time.monotonic() - settled < 1
        time.sleep(0.05)
        assert "d" not in [turn for turn, _ in reads]
    finally:
        stager.close()


def _agent_reads(container, path: str) -> str:
    """What the agent's uid gets reading ``path`` (a file or a directory) in ``container``."""
    code = (
        "import os, sys; p = sys.argv[1]\n"
        "try: print(sorted(os.listdir(p)) if os.path.isdir(p) else open(p).read())\n"
        "except OSError as e: print(type(e).__name__)"
    )
    result = container.exec_run(["python3", "-c", code, path], user="10001:10001")
    return result.output.decode().strip()


@contextlib.contextmanager
def mounted_volume(docker_client, base_image, size_bytes: int, read_only: bool) -> Iterator:
    """(a container idling with a fresh image volume at IMAGE_DIR, the volume's host directory);
    both removed afterwards."""
    run_id = f"test-{uuid.uuid4().hex[:8]}"
    volume = TEST_POLICY.create_image_volume(docker_client, run_id, base_image, size_bytes)
    container = None
    try:
        container = docker_client.containers.run(
            base_image,
            entrypoint=["sleep", "60"],
            detach=True,
            network_mode="none",
            mounts=[Mount(IMAGE_DIR, volume.name, read_only=read_only)],
        )
        yield container, Path(volume.attrs["Mountpoint"])
    finally:
        if container is not None:
            container.remove(force=True)
        volume.remove(force=True)


@pytest.mark.docker
def test_the_agent_reads_only_the_shown_batch(docker_client, base_image):
    """A real image volume mounted read-only as in the sandbox, read by the agent's uid."""
    with mounted_volume(docker_client, base_image, 2**20, read_only=True) as (container, host):
        images = ImageVolume(host)
        now, later = ImageFile("now.txt", b"asked now"), ImageFile("later.txt", b"asked later")
        shown = images.show(images.stage([[now]]))[0][0]
        staged = images.stage([[later]])
        upcoming = f"{IMAGE_DIR}/{staged.directory}"
        assert _agent_reads(container, shown) == "asked now"
        assert _agent_reads(container, upcoming) == "PermissionError"
        assert _agent_reads(container, f"{upcoming}/later.txt") == "PermissionError"
        assert images.show(staged) == [[f"{upcoming}/later.txt"]]
        assert _agent_reads(container, f"{upcoming}/later.txt") == "asked later"
        assert _agent_reads(container, shown) == "PermissionError"  # the batch before: closed


@pytest.mark.docker
def test_a_full_image_directory_is_reported_and_leaves_no_partial_file(docker_client, base_image):
    """A real image volume, mounted by a container, filled by files an agent keeps open; staging
    waits a moment for them to be let go."""
    with mounted_volume(docker_client, base_image, 100 * 1024, read_only=False) as (_, host_dir):
        images = ImageVolume(host_dir, full_wait_s=0.2)
        first = images.stage([[ImageFile("a.jpg", b"a" * 40 * 1024)]])
        images.show(first)
        images.show(images.stage([[ImageFile("b.jpg", b"b" * 40 * 1024)]]))  # two batches fit
        with open(host_dir / first.directory / "a.jpg", "rb"):  # held, as a careless agent might
            started = time.monotonic()
            with pytest.raises(ImageDirFull, match="keeps removed images open"):
                images.stage([[ImageFile("c.jpg", b"c" * 40 * 1024)]])
            assert 0.2 <= time.monotonic() - started < 2  # waited for the agent to let go
            assert os.listdir(host_dir) == [images.shown.directory]  # no partial directory
        # let go while staging waits: staged as soon as the space is back
        held = open(host_dir / images.shown.directory / "b.jpg", "rb")  # noqa: SIM115
        images.show(images.stage([[ImageFile("c.jpg", b"c" * 40 * 1024)]]))
        images.full_wait_s = 5.0
        threading.Timer(0.3, held.close).start()
        started = time.monotonic()
        staged = images.stage([[ImageFile("d.jpg", b"d" * 40 * 1024)]])
        assert 0.25 < time.monotonic() - started < 4
        assert images.show(staged) == [[f"{IMAGE_DIR}/{staged.directory}/d.jpg"]]
