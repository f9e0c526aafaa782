"""The image directory the runner keeps for an agent: content-addressed, one batch shown."""

from __future__ import annotations

import contextlib
import dataclasses
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
from evaluator.benchmarks.crag_mm.agent import TurnPlan
from tests.workers.conftest import (
    TEST_LIMITS,
    TEST_POLICY,
    IdentityTruncator,
    make_split,
)
from workers.image_volume import (
    ImageDirFull,
    ImageFile,
    ImageVolume,
    Stager,
    read_image,
)
from workers.runner import run_agent
from workers.runtimes import check


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

    third = volume.stage([[]])  # nothing answered yet: agentkit may hold both batches shown
    names = [first.directory, second.directory, third.directory]
    assert sorted(p.name for p in tmp_path.iterdir()) == names
    volume.answered()  # the second was answered: agentkit let go of the first
    fourth = volume.stage([[]])  # the first goes, and the third (never shown)
    assert sorted(p.name for p in tmp_path.iterdir()) == [second.directory, fourth.directory]
    assert volume.show(fourth) == [[]]
    assert list((tmp_path / fourth.directory).iterdir()) == []


def test_a_removed_batch_is_emptied_unless_a_batch_kept_links_its_files(tmp_path):
    """Emptied, its space is back even while something holds it (gVisor's dentry cache does)."""
    volume = ImageVolume(tmp_path)
    red, blue = ImageFile("red.jpg", b"r" * 8192), ImageFile("blue.jpg", b"b" * 8192)
    first = volume.stage([[red, blue]])
    volume.show(first)
    with open(tmp_path / first.directory / "blue.jpg", "rb") as held:
        second = volume.stage([[red]])  # red's conversation goes on: linked
        volume.show(second)
        volume.answered()
        volume.stage([[]])
        assert not (tmp_path / first.directory).exists()
        assert os.fstat(held.fileno()).st_size == 0  # emptied, though still open
        assert (tmp_path / second.directory / "red.jpg").read_bytes() == red.data
        assert stat.S_IMODE((tmp_path / second.directory / "red.jpg").stat().st_mode) == 0o444


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
def mounted_volume(
    docker_client, base_image, size_bytes: int, read_only: bool, runtime: str = "runc"
) -> Iterator:
    """(a container idling under ``runtime`` with a fresh image volume at IMAGE_DIR, the
    volume's host directory); both removed afterwards."""
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
            runtime=runtime,
        )
        yield container, Path(volume.attrs["Mountpoint"])
    finally:
        if container is not None:
            container.remove(force=True)
        volume.remove(force=True)


@pytest.mark.docker
def test_the_agent_reads_only_the_shown_batch(docker_client, base_image, agent_runtime):
    """A real image volume mounted read-only as in the sandbox, read by the agent's uid, under
    each runtime (gVisor serves the agent's lookups through its own caches)."""
    with mounted_volume(
        docker_client, base_image, 2**20, read_only=True, runtime=agent_runtime
    ) as (container, host):
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
    """A real image volume, mounted by a container, with room for three batches: while no batch
    is answered (after a time-out, agentkit may hold every batch shown since) staging a fourth
    waits a moment, then reports the directory full; once one is answered, the batches before
    it are emptied and removed, files held open or not."""
    with mounted_volume(docker_client, base_image, 140 * 1024, read_only=False) as (_, host_dir):
        images = ImageVolume(host_dir, full_wait_s=0.2)
        first = images.stage([[ImageFile("a.jpg", b"a" * 40 * 1024)]])
        images.show(first)
        images.show(images.stage([[ImageFile("b.jpg", b"b" * 40 * 1024)]]))
        images.show(images.stage([[ImageFile("c.jpg", b"c" * 40 * 1024)]]))  # three batches fit
        shown = sorted(os.listdir(host_dir))
        started = time.monotonic()
        with pytest.raises(ImageDirFull, match="still holds the images of batches before"):
            images.stage([[ImageFile("d.jpg", b"d" * 40 * 1024)]])
        assert 0.2 <= time.monotonic() - started < 2  # waited for an answer
        assert sorted(os.listdir(host_dir)) == shown  # no partial directory
        # answered while staging waits: staged as soon as the batches before are emptied
        with open(host_dir / first.directory / "a.jpg", "rb") as held:  # as gVisor holds it
            images.full_wait_s = 5.0
            threading.Timer(0.3, images.answered).start()
            started = time.monotonic()
            staged = images.stage([[ImageFile("d.jpg", b"d" * 40 * 1024)]])
            assert 0.25 < time.monotonic() - started < 4
            assert os.fstat(held.fileno()).st_size == 0
        assert images.show(staged) == [[f"{IMAGE_DIR}/{staged.directory}/d.jpg"]]
        assert sorted(os.listdir(host_dir)) == [shown[-1], staged.directory]


@pytest.mark.docker
def test_the_space_of_batches_an_agent_mapped_comes_back_under_each_runtime(
    docker_client, base_image, agent_runtime
):
    """An agent mapping and reading every shown batch's photos, as agentkit does, under runc and
    runsc (whose dentry cache keeps every file it opened): batch after batch, in a directory
    with room for three, never full."""
    with mounted_volume(
        docker_client, base_image, 3 * 1024 * 1024, read_only=True, runtime=agent_runtime
    ) as (container, host_dir):
        images = ImageVolume(host_dir, full_wait_s=0.5)
        mapper = (
            "import mmap, os, sys\n"
            "for p in sys.argv[1:]:\n"
            "    fd = os.open(p, os.O_RDONLY)\n"
            "    m = mmap.mmap(fd, 0, mmap.MAP_SHARED, mmap.PROT_READ); os.close(fd)\n"
            "    assert m[:] == bytes([m[0]]) * len(m); m.close()\n"
        )
        for number in range(12):
            photos = [ImageFile(f"{number}-{i}.jpg", bytes([number]) * 300 * 1024) for i in (0, 1)]
            paths = images.show(images.stage([photos]))[0]
            result = container.exec_run(["python3", "-c", mapper, *paths], user="10001:10001")
            assert result.exit_code == 0, result.output
            images.answered()


@pytest.mark.docker
def test_a_long_run_never_fills_the_image_directory(
    agent_image, tmp_path, recorder, no_leftovers, agent_runtime
):
    """The runner tells the volume of each batch answered, so the batches before are emptied
    and removed: a run of many more batches than the directory's room (three batches and a
    margin of 64 pages) completes with no restart, under each runtime."""
    split = make_split(tmp_path / "s", [1] * 160)  # 80 batches of two, a page of image each
    plan = TurnPlan(split, "multi-source-augmentation", IdentityTruncator().truncate)
    assert plan.volume_bytes(2) < 80 * 2 * 4096
    policy = dataclasses.replace(TEST_POLICY, runtime=check(agent_runtime))
    report = run_agent(
        agent_image("agents/recorder"), plan, "multi-source-augmentation", TEST_LIMITS,
        recorder, policy=policy,
    )  # fmt: skip
    assert report.status == "completed", report.failure_reason
    assert report.restarts == 0 and len(recorder.results) == 160
