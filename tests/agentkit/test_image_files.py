"""Image files are opened with their batch, mapped at their first read, copied only if the agent
keeps them."""

from __future__ import annotations

import base64
import contextlib
import gc
import io
import json
from pathlib import Path

import pytest
from PIL import Image

from agentkit.batch import parse_batch
from agentkit.image_files import BatchFiles
from agentkit.image_open import BadRequest, open_image_file
from agentkit.search import encode_image


def mapped_paths() -> str:
    return Path("/proc/self/maps").read_text()


def open_paths() -> set[str]:
    found = set()
    for fd in Path("/proc/self/fd").iterdir():
        with contextlib.suppress(FileNotFoundError):  # the one listing the directory itself
            found.add(str(fd.readlink()))
    return found


def photo(path: Path, colour: str = "red") -> Path:
    Image.new("RGB", (64, 48), colour).save(path, "JPEG", quality=95)
    return path


def body(*paths: Path) -> bytes:
    turns = [
        {
            "session_id": f"s{i}",
            "interaction_id": f"i{i}",
            "turn_idx": 0,
            "query": "what is this?",
            "image_path": str(path),
        }
        for i, path in enumerate(paths)
    ]
    return json.dumps({"batch_id": "b1", "turns": turns}).encode()


def test_a_batch_maps_its_files_and_releases_only_what_is_kept(tmp_path):
    kept_path, dropped_path = photo(tmp_path / "kept.jpg"), photo(tmp_path / "dropped.jpg", "blue")
    batch = parse_batch(body(kept_path, dropped_path))
    assert {str(kept_path), str(dropped_path)} <= open_paths()  # opened, not mapped yet
    assert str(kept_path) not in mapped_paths()
    kept = batch.turns[0].image  # the agent keeps this one, undecoded
    assert kept is not None and kept.size == (64, 48)  # its header read: mapped now
    assert str(kept_path) in mapped_paths()
    assert batch.release() == 1  # only the kept image's file was still held
    gc.collect()
    assert str(kept_path) not in mapped_paths()
    assert str(dropped_path) not in mapped_paths() and str(dropped_path) not in open_paths()
    assert batch.turns == []
    kept_path.unlink()  # the runner removes the batch's files
    assert kept is not None and kept.convert("RGB").getpixel((10, 10))[0] > 200
    assert batch.release() == 0  # nothing twice


def test_a_kept_undecoded_image_still_searches_with_its_original_bytes(tmp_path):
    path = photo(tmp_path / "p.jpg", "green")
    original = path.read_bytes()
    files = BatchFiles()
    image = open_image_file(str(path), "turns[0].image_path", files)
    assert base64.b64decode(encode_image(image)) == original  # mapped
    files.release()
    path.unlink()
    assert base64.b64decode(encode_image(image)) == original  # copied


def test_a_decoded_image_is_the_file_s_pixels_before_and_after_release(tmp_path):
    path = tmp_path / "p.png"
    Image.effect_noise((40, 30), 60).convert("RGB").save(path)
    expected = Image.open(io.BytesIO(path.read_bytes())).convert("RGB").tobytes()
    files = BatchFiles()
    before = open_image_file(str(path), "w", files)
    assert before.convert("RGB").tobytes() == expected
    after = open_image_file(str(path), "w", files)
    files.release()
    assert after.convert("RGB").tobytes() == expected


@pytest.mark.parametrize("kind", ["empty", "directory", "missing", "relative"])
def test_files_that_are_not_images_are_refused_naming_the_field(tmp_path, kind):
    path = {
        "empty": tmp_path / "empty.jpg",
        "directory": tmp_path,
        "missing": tmp_path / "missing.jpg",
        "relative": Path("relative.jpg"),
    }[kind]
    if kind == "empty":
        path.write_bytes(b"")
    with pytest.raises(BadRequest, match=r"^turns\[0\]\.image_path"):
        parse_batch(body(path))


def test_a_batch_holds_descriptors_only_until_it_is_released(tmp_path):
    path = photo(tmp_path / "p.jpg")
    before = len(list(Path("/proc/self/fd").iterdir()))
    batch = parse_batch(body(*[path] * 16))
    images = [turn.image for turn in batch.turns]  # the agent keeps them all
    assert len(list(Path("/proc/self/fd").iterdir())) == before + 16  # one per file
    assert batch.release() == 16
    assert len(list(Path("/proc/self/fd").iterdir())) == before
    assert all(bytes(image._podium_source_bytes) == path.read_bytes() for image in images)


def test_a_candidate_is_read_whole_and_holds_no_descriptor(tmp_path):
    path = photo(tmp_path / "c.jpg")
    before = len(list(Path("/proc/self/fd").iterdir()))
    opened = [open_image_file(str(path), "candidate c1") for _ in range(20)]
    assert len(list(Path("/proc/self/fd").iterdir())) == before
    assert str(path) not in mapped_paths()
    assert all(image.size == (64, 48) for image in opened)


def test_a_file_never_read_is_copied_through_its_descriptor_once_released(tmp_path):
    path = photo(tmp_path / "p.jpg", "blue")
    batch = parse_batch(body(path))
    kept = batch.turns[0].image  # never looked at while the batch was answered
    path.unlink()  # the runner may remove it as soon as the reply is out
    assert batch.release() == 1
    assert str(path) not in mapped_paths() and not any(str(path) in p for p in open_paths())
    assert kept is not None and kept.convert("RGB").getpixel((5, 5))[2] > 200


def test_a_batch_refused_for_a_bad_field_leaves_no_file_open(tmp_path):
    good = photo(tmp_path / "good.jpg")
    before = open_paths()
    turns = json.loads(body(good, good))
    turns["turns"].append({"session_id": "s", "interaction_id": "i", "turn_idx": -1})
    with pytest.raises(BadRequest, match=r"turns\[2\]\.turn_idx"):
        parse_batch(json.dumps(turns).encode())
    assert str(good) not in open_paths() and open_paths() <= before | {str(good)}
