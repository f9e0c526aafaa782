"""Image files as an agent reads them: opened, then mapped at their first read, not copied.

Reading a batch's photos whole copies every byte (16 photos of ~280 KB: about 4 ms, most of
agentkit's time per batch), although an agent that never decodes an image needs only its
header, and one that never looks at it needs nothing. A batch's file is opened when the batch
is read (a missing or irregular file is refused then) and mapped the first time something reads
it: only the pages Pillow reads are touched (the header, or the whole file when the agent
decodes the pixels), straight from the image directory's tmpfs. A batch's own images are
opened this way (a few per item); a Visual-RAG candidate, opened only when the agent asks
(hundreds per item), is read whole, so that no batch holds more descriptors than it has items'
images.

An open file or a mapping would keep a removed file's space in the image directory (the runner
removes each batch's files once the next is shown), so once a batch is answered,
:meth:`BatchFiles.release` copies every file an agent still holds into memory and closes it: an
image kept for later costs the agent's memory, as when files were read whole, never the
directory's space.
"""

from __future__ import annotations

import contextlib
import io
import mmap
import os
import stat
import threading
import weakref


class _Descriptor:
    """An open file's descriptor, closed once by whichever gets there first: its mapping, its
    copy, or the batch's release (never a finaliser: Python code run by the garbage collector
    would swallow the exception a SIGTERM handler raises in it)."""

    __slots__ = ("fd",)

    def __init__(self, fd: int) -> None:
        self.fd: int | None = fd

    def close(self) -> None:
        fd, self.fd = self.fd, None
        if fd is not None:
            os.close(fd)


class MappedFile:
    """One image file, file-like for Pillow (read, readline, seek, tell): its descriptor until
    the first read, then its mapping, or its copy once released.

    ``bytes(file)`` is the whole content (the search client sends it for an undecoded image).
    """

    def __init__(self, descriptor: _Descriptor, size: int) -> None:
        self._descriptor = descriptor
        self._size = size
        self._buffer: mmap.mmap | io.BytesIO | None = None

    # Until the first use, these map the file; then the buffer's own bound methods stand in
    # their place (Pillow reads a JPEG header in dozens of small reads: no wrapper in between).
    def read(self, *size: int) -> bytes:
        return self._mapped().read(*size)

    def readline(self) -> bytes:
        return self._mapped().readline()

    def seek(self, *where: int) -> int:
        return self._mapped().seek(*where) or 0  # type: ignore[arg-type]

    def tell(self) -> int:
        return self._mapped().tell()

    def head(self, size: int) -> bytes:
        """The file's first ``size`` bytes, without mapping it."""
        fd = self._descriptor.fd
        if self._buffer is None and fd is not None:
            return os.pread(fd, size, 0)
        return bytes(self)[:size]

    @property
    def mapped(self) -> bool:
        return isinstance(self._buffer, mmap.mmap)

    @property
    def open(self) -> bool:
        """Whether the file is still open or mapped (``release`` would copy it)."""
        buffer = self._buffer
        if buffer is None:
            return self._descriptor.fd is not None
        return isinstance(buffer, mmap.mmap) and not buffer.closed

    def __bytes__(self) -> bytes:
        buffer = self._mapped()
        return buffer[:] if isinstance(buffer, mmap.mmap) else buffer.getvalue()

    def _mapped(self) -> mmap.mmap | io.BytesIO:
        if self._buffer is None:
            fd = self._descriptor.fd
            if fd is None:
                raise ValueError("the image's file was closed with its batch")
            try:  # mmap refuses empty files; Pillow then says what is wrong
                empty = self._size == 0
                flags, access = mmap.MAP_SHARED, mmap.PROT_READ
                self._use(io.BytesIO() if empty else mmap.mmap(fd, 0, flags, access))
            finally:
                self._descriptor.close()  # a mapping keeps a descriptor of its own
        assert self._buffer is not None
        return self._buffer

    def _use(self, buffer: mmap.mmap | io.BytesIO) -> None:
        self._buffer = buffer
        for name in ("read", "readline", "seek", "tell"):
            setattr(self, name, getattr(buffer, name))

    def release(self) -> None:
        """Go on from a copy in memory and close the file (nothing if already done)."""
        if self._buffer is None:  # never read: copy it through its descriptor
            fd = self._descriptor.fd
            if fd is not None:
                try:
                    self._use(io.BytesIO(_read_all(fd, self._size)))
                finally:
                    self._descriptor.close()
            return
        mapping = self._buffer
        if not isinstance(mapping, mmap.mmap) or mapping.closed:
            return
        copy = io.BytesIO(mapping[:])
        copy.seek(mapping.tell())
        self._use(copy)
        with contextlib.suppress(BufferError):  # a view of it is held: it ends with the view
            mapping.close()


def read_file(path: str) -> bytes:
    """The whole regular file at ``path``, no descriptor kept. Raises :class:`OSError`."""
    fd, size = _open_regular(path)
    try:
        return _read_all(fd, size)
    finally:
        os.close(fd)


def _open_regular(path: str) -> tuple[int, int]:
    """A descriptor of the regular file at ``path`` and its size."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)  # a FIFO: no wait
    try:
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode):
            raise OSError(f"{path} is not a regular file")
    except BaseException:
        os.close(fd)
        raise
    return fd, status.st_size


def _read_all(fd: int, size: int) -> bytes:
    data = os.pread(fd, size, 0)
    while more := os.pread(fd, 1024 * 1024, len(data)):  # a short read, or a file that grew
        data += more
    return data


class BatchFiles:
    """The image files opened for one batch: their descriptors are the batch's, the files
    held weakly. :meth:`release`, once the batch is answered or refused (the server and
    ``parse_batch`` see to it on every path), closes every descriptor. No finaliser does: the
    collector runs Python code at any moment, and an exception a SIGTERM handler raised in it
    would be swallowed."""

    def __init__(self) -> None:
        self._files: list[weakref.ref[MappedFile]] = []
        self._descriptors: list[_Descriptor] = []
        self._lock = threading.Lock()

    def map(self, path: str) -> MappedFile:
        """Open ``path`` for this batch, mapped at its first read (its descriptor is held
        until then, or until :meth:`release`). Raises :class:`OSError`."""
        fd, size = _open_regular(path)
        descriptor = _Descriptor(fd)
        file = MappedFile(descriptor, size)
        with self._lock:
            self._descriptors.append(descriptor)
            self._files.append(weakref.ref(file))
        return file

    def release(self) -> int:
        """Copy and close the files still held (an image the agent kept), close every other
        descriptor; how many files were held."""
        with self._lock:
            files, self._files = self._files, []
        held = [file for file in (ref() for ref in files) if file is not None and file.open]
        for file in held:
            file.release()
        with self._lock:
            descriptors, self._descriptors = self._descriptors, []
        for descriptor in descriptors:  # those of the files nobody holds any more
            descriptor.close()
        return len(held)
