"""Image files as an agent reads them: mapped, not copied, while their batch is answered.

Reading a batch's photos whole copies every byte (16 photos of ~280 KB: about 4 ms, most of
agentkit's time per batch), although an agent that never decodes an image needs only its
header. A mapped file costs a system call; only the pages Pillow reads are touched (the
header, or the whole file when the agent decodes the pixels), straight from the image
directory's tmpfs. A batch's own images are mapped (a few per item); a Visual-RAG candidate,
opened only when the agent asks (hundreds per item), is read whole, so that no batch holds more
descriptors than it has items' images.

A mapping would keep a removed file's space in the image directory (the runner removes each
batch's files once the next is shown), so once a batch is answered, :meth:`BatchFiles.release`
copies every file an agent still holds into memory and unmaps it: an image kept for later costs
the agent's memory, as when files were read whole, never the directory's space.
"""

from __future__ import annotations

import contextlib
import io
import mmap
import os
import stat
import threading
import weakref
from collections.abc import Iterator


class MappedFile:
    """One image file, file-like for Pillow: its mapping, or its copy once released.

    ``bytes(file)`` is the whole content (the search client sends it for an undecoded image).
    """

    def __init__(self, buffer: mmap.mmap | io.BytesIO) -> None:
        self._use(buffer)

    def _use(self, buffer: mmap.mmap | io.BytesIO) -> None:
        # bound methods, not wrappers: Pillow reads a JPEG header in dozens of small reads
        self._buffer = buffer
        self.read = buffer.read
        self.readline = buffer.readline
        self.seek = buffer.seek
        self.tell = buffer.tell

    @property
    def mapped(self) -> bool:
        return isinstance(self._buffer, mmap.mmap)

    def __bytes__(self) -> bytes:
        buffer = self._buffer
        return buffer[:] if isinstance(buffer, mmap.mmap) else buffer.getvalue()

    def release(self) -> None:
        """Go on from a copy in memory and unmap the file (nothing if already done)."""
        mapping = self._buffer
        if not isinstance(mapping, mmap.mmap) or mapping.closed:
            return
        copy = io.BytesIO(mapping[:])
        copy.seek(mapping.tell())
        self._use(copy)
        with contextlib.suppress(BufferError):  # a view of it is held: it ends with the view
            mapping.close()


def map_file(path: str) -> MappedFile:
    """Map the regular file at ``path`` read-only. Python's mapping keeps a descriptor of its
    own until it is closed (released, or freed). Raises :class:`OSError`."""
    with _opened(path) as (fd, size):
        if size == 0:  # mmap refuses empty files; Pillow says what is wrong
            return MappedFile(io.BytesIO())
        return MappedFile(mmap.mmap(fd, 0, mmap.MAP_SHARED, mmap.PROT_READ))


def read_file(path: str) -> bytes:
    """The whole regular file at ``path``, no descriptor kept. Raises :class:`OSError`."""
    with _opened(path) as (fd, size):
        data = os.read(fd, size)
        while more := os.read(fd, 1024 * 1024):  # a short read, or a file that grew: rare
            data += more
        return data


@contextlib.contextmanager
def _opened(path: str) -> Iterator[tuple[int, int]]:
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)  # a FIFO: no wait
    try:
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode):
            raise OSError(f"{path} is not a regular file")
        yield fd, status.st_size
    finally:
        os.close(fd)


class BatchFiles:
    """The image files mapped for one batch, held weakly: :meth:`release` when it is answered."""

    def __init__(self) -> None:
        self._files: list[weakref.ref[MappedFile]] = []
        self._lock = threading.Lock()

    def map(self, path: str) -> MappedFile:
        """Map ``path`` for this batch (a descriptor is held until :meth:`release`)."""
        file = map_file(path)
        with self._lock:
            self._files.append(weakref.ref(file))
        return file

    def release(self) -> int:
        """Copy and unmap the files still held (an image the agent kept); how many there were.

        A file nobody holds any more was unmapped when it was freed."""
        with self._lock:
            files, self._files = self._files, []
        held = [file for file in (ref() for ref in files) if file is not None and file.mapped]
        for file in held:
            file.release()
        return len(held)
