"""JPEG images whose header is read the first time the agent uses them.

``PIL.Image.open`` parses a JPEG's markers in Python: about 45 µs for a 960x1280 photo, 0.7 ms
for a batch of 16, paid before the agent is called whether it looks at its images or not.
:func:`lazy_jpeg` gives a real ``JpegImageFile`` (``isinstance`` checks, ``format``, every method
work as before) that reads its header on the first use of anything else (``size``, ``mode``,
``load()``, ``convert()``...), inside the agent's own time, exactly once even when several
threads touch it at the same moment. Only data that starts as a JPEG does is opened this way;
a header that turns out to be broken raises ``PIL.UnidentifiedImageError`` (a decompression
bomb ``PIL.Image.DecompressionBombError``) at that first use and every use after it.
"""

from __future__ import annotations

import threading
from typing import IO, Any

from PIL import Image, ImageFile, UnidentifiedImageError
from PIL.JpegImagePlugin import JpegImageFile

JPEG_START = b"\xff\xd8\xff"
_PENDING = "_podium_pending"  # the file, until the header is read
_LOCK = "_podium_lock"
_FAILED = "_podium_failed"  # (exception class, message): why the header could not be read
SOURCE_KEPT = "_podium_source_bytes"  # agentkit.search.SOURCE_BYTES_ATTR: kept on failure


class LazyJpegImageFile(JpegImageFile):
    """A JPEG whose ``ImageFile.__init__`` (the header's parse) runs on first attribute use."""

    def __init__(self, fp: IO[bytes], name: str) -> None:  # no super().__init__: that is lazy
        self.__dict__.update({_PENDING: (fp, name), _LOCK: threading.RLock()})

    def __getattr__(self, name: str) -> Any:  # only for attributes not set (yet)
        lock = self.__dict__.get(_LOCK)
        if lock is None:  # copies made by Pillow (``__setstate__``) are ordinary images
            raise AttributeError(name)
        with lock:
            pending = self.__dict__.pop(_PENDING, None)
            if pending is not None:
                self._read_header(*pending)
        failed = self.__dict__.get(_FAILED)
        if failed is not None:
            kind, message = failed
            raise kind(message)
        return object.__getattribute__(self, name)

    def _read_header(self, fp: IO[bytes], name: str) -> None:
        try:
            fp.seek(0)
            ImageFile.ImageFile.__init__(self, fp)
            Image._decompression_bomb_check(self.size)
        except Image.DecompressionBombError as exc:
            self._fail(Image.DecompressionBombError, f"{name}: {exc}")
        except (SyntaxError, IndexError, TypeError, ValueError, OSError) as exc:
            self._fail(UnidentifiedImageError, f"cannot identify image file {name}: {exc}")

    def _fail(self, kind: type[Exception], message: str) -> None:
        """Forget what the failed parse set, so that every later use raises again."""
        kept = {key: self.__dict__[key] for key in (_LOCK, SOURCE_KEPT) if key in self.__dict__}
        self.__dict__.clear()
        self.__dict__.update(kept, **{_FAILED: (kind, message)})


def lazy_jpeg(fp: IO[bytes], start: bytes, name: str) -> Image.Image | None:
    r"""A :class:`LazyJpegImageFile` over ``fp`` (file-like: read, seek, tell) when its data
    ``start``\ s as a JPEG does, else None (open it with ``PIL.Image.open``). ``name`` is what
    an error says."""
    return LazyJpegImageFile(fp, name) if start[: len(JPEG_START)] == JPEG_START else None
