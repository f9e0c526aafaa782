"""The image directory of one agent container start: the runner writes it, the agent reads it.

Items carry their images as file paths (a CRAG-MM turn's ``image_path``, a Visual-RAG item's
given images and candidates) instead of base64 in the JSON body.
The directory is a tmpfs docker volume (``SandboxPolicy.create_image_volume``) mounted
read-only at ``IMAGE_DIR`` in the container; the runner writes through the volume's host
``Mountpoint``, in two steps so that writing stays off the path of a batch call:

1. :meth:`ImageVolume.stage` (while the agent still answers the batch before) writes a batch's
   images into a fresh subdirectory of mode 0700: owned by the runner, so the agent (another
   uid, no capabilities) can neither list nor open what is in it. Files are named
   ``<sha256 of the file><suffix>``, once per batch whatever the number of items that show it;
   an image the shown batch already has (the next turn of the same conversation, the same
   candidate pool) is hard-linked, not written again. Staging first removes the directories
   of earlier batches.
2. :meth:`ImageVolume.show`, just before the batch is sent, opens that directory to the agent
   (0755) and closes the one shown before (0700): two ``chmod`` calls.

So the agent can only ever read the images of the batch being asked: no image of a later item,
never any ground truth.

A removed file's space comes back only once nothing holds it: under runc, once agentkit has let
go of it (it maps a batch's files and copies what the agent keeps just after answering it);
under gVisor (runsc), never by itself, since gVisor's dentry cache keeps a host descriptor of
every file the agent opened, removed or not. So the runner gives the space back itself: it
empties (truncates) a batch's files before removing them, which frees a tmpfs file's pages
whoever holds it. It does so only for batches agentkit has surely let go of: those before the
last batch answered (:meth:`ImageVolume.answered`: agentkit releases a batch's files before it
reads the next request) and those never shown; a batch shown since stays, hidden, until then.
The volume is sized by the benchmark's plan (``evaluator.seam.agent_plan.AgentPlan.volume_bytes``)
for three batches of the largest items (the one answered last, the one shown, the one staged
ahead), so it cannot overflow while the agent answers in time; after a time-out (the agent may
still hold older batches) staging waits a moment, then reports :class:`ImageDirFull`.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import errno
import hashlib
import itertools
import os
import re
import shutil
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from agentkit.protocol import IMAGE_DIR

SUFFIX = re.compile(r"\.[a-z0-9]{1,8}")
FULL_WAIT_S, FULL_POLL_S = 1.0, 0.01
HIDDEN, SHOWN = 0o700, 0o755
T = TypeVar("T")


class ImageDirFull(Exception):
    """The image directory has no room for a batch's images; the message says why."""


@dataclass(frozen=True)
class ImageFile:
    """An image file's content and its name in the image directory."""

    name: str
    data: bytes


@dataclass(frozen=True)
class StagedBatch:
    """A batch's images written to a hidden subdirectory of the image directory."""

    directory: str  # the subdirectory's name
    names: tuple[tuple[str, ...], ...]  # per item, its files' names


def read_image(path: Path) -> ImageFile:
    """Read ``path`` and name it by its content: ``<sha256><suffix>`` (suffix lower-cased)."""
    data = path.read_bytes()
    suffix = path.suffix.lower()
    name = hashlib.sha256(data).hexdigest() + (suffix if SUFFIX.fullmatch(suffix) else "")
    return ImageFile(name, data)


class ImageVolume:
    """The image directory at ``host_dir`` (the volume's Mountpoint) as the runner keeps it.

    ``stage`` may run on another thread than ``show``, but not at the same time as it.
    """

    def __init__(self, host_dir: Path, full_wait_s: float = FULL_WAIT_S) -> None:
        self.host_dir = host_dir
        self.full_wait_s = full_wait_s
        self.shown: StagedBatch | None = None
        # the directories shown since the last batch answered, that one included: agentkit may
        # still hold their files (replaced whole: ``stage`` may read it on another thread)
        self.unreleased: tuple[str, ...] = ()
        self._numbers = itertools.count(1)

    def stage(self, images: Sequence[Sequence[ImageFile]]) -> StagedBatch:
        """Write each item's ``images`` into a new hidden subdirectory, after removing those of
        batches before the shown one. A full directory is tried again for ``full_wait_s``
        (agentkit lets go of the batch before's files just after answering it), then
        :class:`ImageDirFull`."""
        waited_until = time.monotonic() + self.full_wait_s
        while True:
            try:
                return self._stage(images)
            except ImageDirFull:
                if time.monotonic() >= waited_until:
                    raise
                time.sleep(FULL_POLL_S)

    def _stage(self, images: Sequence[Sequence[ImageFile]]) -> StagedBatch:
        self._remove_released()
        staged = StagedBatch(
            f"{next(self._numbers):06d}",
            tuple(tuple(image.name for image in files) for files in images),
        )
        directory = self.host_dir / staged.directory
        os.mkdir(directory, HIDDEN)
        os.chmod(directory, HIDDEN)  # whatever the umask
        shown = self.shown
        shown_names = {name for names in shown.names for name in names} if shown else set()
        unique = {image.name: image for files in images for image in files}
        try:
            for image in unique.values():
                if shown is not None and image.name in shown_names:
                    os.link(self.host_dir / shown.directory / image.name, directory / image.name)
                else:
                    _write(directory / image.name, image.data)
        except OSError as exc:
            shutil.rmtree(directory, ignore_errors=True)
            if exc.errno in (errno.ENOSPC, errno.EDQUOT):
                raise ImageDirFull(
                    f"the image directory is full ({len(unique)} images to stage): "
                    "the agent still holds the images of batches before"
                ) from None
            raise
        return staged

    def show(self, staged: StagedBatch) -> list[list[str]]:
        """Make ``staged`` the one directory the agent can read; per item, its images' paths
        inside the container, in order."""
        os.chmod(self.host_dir / staged.directory, SHOWN)
        if self.shown is not None and self.shown != staged:
            os.chmod(self.host_dir / self.shown.directory, HIDDEN)
        self.shown = staged
        if staged.directory not in self.unreleased:
            self.unreleased = (*self.unreleased, staged.directory)
        return [
            [f"{IMAGE_DIR}/{staged.directory}/{name}" for name in names] for names in staged.names
        ]

    def answered(self) -> None:
        """The agent answered the shown batch: agentkit has let go of every batch before it."""
        if self.shown is not None:
            self.unreleased = (self.shown.directory,)

    def _remove_released(self) -> None:
        """Empty and remove every directory but those agentkit may still hold."""
        unreleased = self.unreleased
        for entry in os.scandir(self.host_dir):
            if entry.name not in unreleased:
                _empty(entry.path)
                shutil.rmtree(entry.path, ignore_errors=True)


@dataclass(frozen=True)
class _Ahead(Generic[T]):
    batch: Sequence[T]
    start_now: threading.Event  # ends the hold-off
    dropped: threading.Event  # ... and staging is not wanted any more
    staged: concurrent.futures.Future[StagedBatch | None]


class Stager(Generic[T]):
    """Stages batches of items (``T``) on a thread of its own: the upcoming batch while the agent
    answers the one before. ``read`` gives an item's images.

    Staging ahead waits ``hold_off_s`` first, so that it does not compete for the CPU with the
    agent reading its own batch's images; showing the batch ends the wait at once.
    """

    def __init__(self, read: Callable[[T], Sequence[ImageFile]]) -> None:
        self.read = read
        self._thread = concurrent.futures.ThreadPoolExecutor(1, "podium-images")
        self._ahead: _Ahead[T] | None = None

    def stage_ahead(self, volume: ImageVolume, batch: Sequence[T], hold_off_s: float = 0) -> None:
        """Start staging ``batch``, the next one to be shown on ``volume``, in ``hold_off_s``."""
        self.settle()
        start_now, dropped = threading.Event(), threading.Event()
        staged = self._thread.submit(
            self._stage_after, start_now, dropped, hold_off_s, volume, batch
        )
        self._ahead = _Ahead(batch, start_now, dropped, staged)

    def read_ahead(self, batch: Sequence[T]) -> None:
        """Read ``batch``'s images on the stager's thread, for ``read`` to keep (the first
        batch's, while the agent loads: it is staged once the batch size is known)."""
        self._thread.submit(lambda: [self.read(item) for item in batch])

    def show(self, volume: ImageVolume, batch: Sequence[T]) -> list[list[str]]:
        """Show ``batch``'s images (staged ahead, or now); their paths in the container."""
        ahead, self._ahead = self._ahead, None
        if ahead is not None and ahead.batch is batch:
            ahead.start_now.set()
            staged = ahead.staged.result()
            assert staged is not None  # only a dropped batch is not staged
            return volume.show(staged)
        if ahead is not None:
            _drop(ahead)
        return volume.show(self._stage(volume, batch))

    def settle(self) -> None:
        """Drop what is being staged: call before the volume goes."""
        ahead, self._ahead = self._ahead, None
        if ahead is not None:
            _drop(ahead)

    def close(self) -> None:
        self.settle()
        self._thread.shutdown()

    def _stage_after(
        self,
        start_now: threading.Event,
        dropped: threading.Event,
        hold_off_s: float,
        volume: ImageVolume,
        batch: Sequence[T],
    ) -> StagedBatch | None:
        start_now.wait(hold_off_s)
        return None if dropped.is_set() else self._stage(volume, batch)

    def _stage(self, volume: ImageVolume, batch: Sequence[T]) -> StagedBatch:
        return volume.stage([self.read(item) for item in batch])


def _drop(ahead: _Ahead[Any]) -> None:
    """Cancel staging ``ahead`` or wait until it is done (its outcome is not wanted)."""
    ahead.dropped.set()
    ahead.start_now.set()
    if not ahead.staged.cancel():
        concurrent.futures.wait([ahead.staged])


def _empty(directory: str) -> None:
    """Truncate each file of ``directory`` that no other directory links: its pages are freed
    now, even while gVisor (or a careless agent) still holds it."""
    with contextlib.suppress(FileNotFoundError), os.scandir(directory) as entries:
        for entry in entries:
            if (
                entry.is_file(follow_symlinks=False)
                and entry.stat(follow_symlinks=False).st_nlink == 1
            ):
                os.chmod(entry.path, 0o600)  # the runner's own file, written 0444
                os.truncate(entry.path, 0)


def _write(path: Path, data: bytes) -> None:
    # O_EXCL: never through a planted link. Plain os calls: this runs for every image.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o444)
    try:
        os.fchmod(fd, 0o444)  # whatever the umask: the agent's uid must read it
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)
