"""The image directory the runner keeps for an agent: content-addressed, one batch at a time."""

from __future__ import annotations

import hashlib
import os
import stat
import uuid
from pathlib import Path

import pytest

from agentkit.protocol import IMAGE_DIR
from tests.workers.conftest import TEST_POLICY
from workers.image_volume import (
    MARGIN_BYTES,
    ImageDirFull,
    ImageFile,
    ImageVolume,
    read_image,
    volume_bytes,
)


def test_images_are_named_by_content_with_their_suffix(tmp_path):
    (tmp_path / "a.JPG").write_bytes(b"same bytes")
    (tmp_path / "b.jpg").write_bytes(b"same bytes")
    (tmp_path / "c.we ird").write_bytes(b"other")
    digest = hashlib.sha256(b"same bytes").hexdigest()
    assert read_image(tmp_path / "a.JPG") == ImageFile(f"{digest}.jpg", b"same bytes")
    assert read_image(tmp_path / "b.jpg").name == f"{digest}.jpg"
    assert read_image(tmp_path / "c.we ird").name == hashlib.sha256(b"other").hexdigest()


def test_volume_holds_the_largest_batch_in_whole_pages(tmp_path):
    sizes = {"a": 10, "b": 5000, "c": 4096, "d": 1}
    for name, size in sizes.items():
        (tmp_path / name).write_bytes(b"x" * size)
    paths = [tmp_path / name for name in sizes] + [tmp_path / "b"]  # "b" twice: counted once
    assert volume_bytes(paths, 2) == 8192 + 4096 + MARGIN_BYTES
    assert volume_bytes(paths, 16) == 8192 + 4096 + 4096 + 4096 + MARGIN_BYTES
    assert volume_bytes([], 16) == MARGIN_BYTES
    with pytest.raises(FileNotFoundError, match=r"missing\.jpg"):
        volume_bytes([tmp_path / "missing.jpg"], 16)


def test_stage_keeps_exactly_the_batchs_images_and_reuses_written_ones(tmp_path):
    volume = ImageVolume(tmp_path)
    red, blue, green = (ImageFile(f"{c}.jpg", c.encode() * 100) for c in ("red", "blue", "green"))
    paths = volume.stage([red, None, blue, red])
    assert paths == [f"{IMAGE_DIR}/red.jpg", None, f"{IMAGE_DIR}/blue.jpg", f"{IMAGE_DIR}/red.jpg"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["blue.jpg", "red.jpg"]
    assert (tmp_path / "red.jpg").read_bytes() == red.data
    assert stat.S_IMODE((tmp_path / "red.jpg").stat().st_mode) == 0o444
    inode = (tmp_path / "red.jpg").stat().st_ino
    volume.stage([green, red])  # red's conversation goes on: not written again
    assert sorted(p.name for p in tmp_path.iterdir()) == ["green.jpg", "red.jpg"]
    assert (tmp_path / "red.jpg").stat().st_ino == inode
    assert volume.stage([None]) == [None]
    assert list(tmp_path.iterdir()) == []


@pytest.mark.docker
def test_a_full_image_directory_is_reported_and_leaves_no_partial_file(docker_client, base_image):
    """A real image volume, mounted by a container, filled by files an agent keeps open."""
    run_id = f"test-{uuid.uuid4().hex[:8]}"
    volume = TEST_POLICY.create_image_volume(docker_client, run_id, base_image, 64 * 1024)
    container = None
    try:
        container = docker_client.containers.run(
            base_image,
            entrypoint=["sleep", "60"],
            detach=True,
            network_mode="none",
            mounts=[{"Target": IMAGE_DIR, "Source": volume.name, "Type": "volume"}],
        )
        host_dir = Path(volume.attrs["Mountpoint"])
        images = ImageVolume(host_dir)
        big = ImageFile("big.jpg", b"x" * 40 * 1024)
        images.stage([big])
        with open(host_dir / "big.jpg", "rb"):  # held open, as a careless agent might
            with pytest.raises(ImageDirFull, match="keeps removed images open"):
                images.stage([ImageFile("next.jpg", b"y" * 40 * 1024)])
            assert os.listdir(host_dir) == []
        assert images.stage([ImageFile("next.jpg", b"y" * 40 * 1024)]) == [f"{IMAGE_DIR}/next.jpg"]
    finally:
        if container is not None:
            container.remove(force=True)
        volume.remove(force=True)
