"""A batch's JPEGs are real PIL images whose header is read at their first use, once."""

from __future__ import annotations

import copy
import io
import pickle
import threading

import pytest
from PIL import Image, ImageFile, UnidentifiedImageError
from PIL.JpegImagePlugin import JpegImageFile

from agentkit.image_open import open_image
from agentkit.lazy_image import LazyJpegImageFile


def jpeg(size: tuple[int, int] = (64, 48), colour: str = "red") -> bytes:
    out = io.BytesIO()
    Image.new("RGB", size, colour).save(out, "JPEG", quality=90)
    return out.getvalue()


@pytest.fixture
def header_reads(monkeypatch) -> list[int]:
    reads: list[int] = []
    real = ImageFile.ImageFile.__init__

    def counting(self, *args, **kwargs):
        reads.append(id(self))
        real(self, *args, **kwargs)

    monkeypatch.setattr(ImageFile.ImageFile, "__init__", counting)
    return reads


def test_a_jpeg_is_a_jpeg_image_whose_header_waits_for_its_first_use(header_reads):
    image = open_image(jpeg(), "turns[0].image_path")
    assert isinstance(image, JpegImageFile) and isinstance(image, Image.Image)
    assert image.format == "JPEG" and header_reads == []
    assert image.size == (64, 48) and image.mode == "RGB"
    assert header_reads == [id(image)]
    assert image.convert("L").size == (64, 48) and image.getpixel((3, 3))[0] > 200
    assert len(header_reads) == 1  # once, whatever is used after


def test_threads_touching_it_at_once_read_the_header_once(header_reads):
    image = open_image(jpeg((320, 240)), "w")
    sizes: list[tuple[int, int]] = []
    start = threading.Barrier(8)

    def use() -> None:
        start.wait()
        sizes.append(image.size)

    threads = [threading.Thread(target=use) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sizes == [(320, 240)] * 8 and header_reads == [id(image)]


def test_a_broken_header_is_refused_at_its_first_use_naming_the_image_every_time():
    image = open_image(b"\xff\xd8\xff" + b"\x00" * 64, "turns[3].image_path")
    assert isinstance(image, LazyJpegImageFile)
    for _ in range(2):
        with pytest.raises(UnidentifiedImageError, match=r"turns\[3\]\.image_path"):
            image.size  # noqa: B018
        with pytest.raises(UnidentifiedImageError):
            image.load()


def test_a_decompression_bomb_is_refused_at_its_first_use(monkeypatch):
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 100)
    image = open_image(jpeg((64, 48)), "w")  # 3072 pixels: over twice the limit
    for _ in range(2):
        with pytest.raises(Image.DecompressionBombError, match=r"^w: Image size"):
            image.load()


def test_copies_and_pickles_of_a_lazy_image_are_ordinary_images():
    image = open_image(jpeg(colour="blue"), "w")
    for other in (copy.copy(image), copy.deepcopy(image), pickle.loads(pickle.dumps(image))):
        assert other.size == (64, 48) and other.convert("RGB").getpixel((1, 1))[2] > 200
    assert not hasattr(image, "no_such_attribute")


def test_other_formats_are_opened_at_once():
    out = io.BytesIO()
    Image.new("RGB", (5, 4)).save(out, "PNG")
    image = open_image(out.getvalue(), "w")
    assert not isinstance(image, LazyJpegImageFile) and image.size == (5, 4)
    with pytest.raises(UnidentifiedImageError):
        open_image(b"GIF89a not really", "w")
