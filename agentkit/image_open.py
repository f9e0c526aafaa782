"""Opening an image an agent is given: a file (mapped, ``agentkit.image_files``) or bytes,
its pixels not decoded (a JPEG's header read at first use: ``agentkit.lazy_image``). A batch's
turns (``agentkit.batch``) and items (``agentkit.items``, ``agentkit.m2rag_items``) use it; a
bad image or path is a :class:`BadRequest` naming the field."""

from __future__ import annotations

import io
import os
from typing import IO, Any, cast

from PIL import Image, UnidentifiedImageError

from agentkit.image_files import BatchFiles, MappedFile, read_file
from agentkit.lazy_image import lazy_jpeg
from agentkit.search import SOURCE_BYTES_ATTR


class BadRequest(ValueError):
    """The request body breaks the protocol; the message names the field."""


def open_image_file(path: Any, where: str, files: BatchFiles | None = None) -> Image.Image:
    """The image at ``path`` (absolute), its pixels not decoded: mapped for ``files``, else
    read whole. Raises :class:`BadRequest` naming ``where``."""
    if not isinstance(path, str) or not os.path.isabs(path):
        shown = repr(path) if isinstance(path, str) else value_kind(path)
        raise BadRequest(f"{where} must be an absolute file path or null, got {shown}")
    try:
        file = files.map(path) if files is not None else read_file(path)
    except OSError as exc:
        reason = f"cannot read {path}: {exc.strerror}" if exc.strerror else str(exc)
        raise BadRequest(f"{where}: {reason}") from None
    return open_image_source(file, where)


def open_image(data: bytes | MappedFile, name: str = "image") -> Image.Image:
    """Open encoded image bytes (or a mapped file) without decoding the pixels; a JPEG's
    header is read at its first use (``agentkit.lazy_image``), others' now. ``name`` is what
    an error says.

    The source stays attached so the search client can send it as it is while the image is
    still undecoded (hence unmodified).
    """
    # Pillow needs only read, seek and tell of a file (MappedFile has them)
    file: IO[bytes]
    if isinstance(data, bytes):
        file, start = io.BytesIO(data), data[:3]
    else:
        file, start = cast(IO[bytes], data), data.head(3)
    image = lazy_jpeg(file, start, name) or Image.open(file)
    setattr(image, SOURCE_BYTES_ATTR, data)
    return image


def open_image_source(data: bytes | MappedFile, where: str) -> Image.Image:
    """``open_image``, a file Pillow cannot read raising :class:`BadRequest` naming ``where``."""
    try:
        return open_image(data, where)
    except (UnidentifiedImageError, Image.DecompressionBombError, OSError, ValueError) as exc:
        raise BadRequest(f"{where} is not an image Pillow can read: {exc}") from None


def value_kind(value: Any) -> str:
    """How an error names a JSON value's type (``null``, ``str``, ``list``...)."""
    return "null" if value is None else type(value).__name__
