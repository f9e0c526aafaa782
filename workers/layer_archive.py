"""A built image written out from the build engine's store with only the layers the node lacks.

``docker save`` writes every layer of an image, the base's included (for Podium's agent base,
240 MB: seconds per build), though the node's engine has those layers already. This module
writes the archive ``docker load`` reads with the image's own config and only its layers past
``skip`` (those the build made); ``docker load`` finds the others by their chain in the node's
engine without opening them.

Each layer's tar is put together as Docker itself does it from an overlay2 store: the layer's
``tar-split`` record (its tar headers and padding, byte for byte, and the files' sizes) with the
files' contents read from its ``diff`` folder. ``docker load`` checks every layer against the
config's ``diff_ids`` and the config against the image ID, so a wrong byte refuses the archive;
the caller then hands the image over by ``docker save`` (``workers.build_engine``). Nothing here
decides what a build may see: it only makes the hand-over cheaper.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
import json
import os
import stat
import tarfile
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO

CHUNK = 1024 * 1024


class LayerStoreError(Exception):
    """The store is not one this module reads, or does not hold what it should."""


def _hex(digest: str) -> str:
    return digest.removeprefix("sha256:")


def chain_ids(diff_ids: list[str]) -> list[str]:
    """Each layer's chain ID (what Docker's layer store is keyed by)."""
    chains: list[str] = []
    for diff_id in diff_ids:
        if not chains:
            chains.append(diff_id)
        else:
            link = f"{chains[-1]} {diff_id}".encode()
            chains.append("sha256:" + hashlib.sha256(link).hexdigest())
    return chains


def image_config(root: Path, image_id: str) -> bytes:
    """The image's config, as stored (its sha256 is the image ID)."""
    path = root / "image/overlay2/imagedb/content/sha256" / _hex(image_id)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise LayerStoreError(f"{image_id}: no config in {root} ({exc})") from None
    if "sha256:" + hashlib.sha256(data).hexdigest() != image_id:
        raise LayerStoreError(f"{image_id}: the stored config does not match its ID")
    return data


def write(root: Path, image_id: str, skip: int, out: IO[bytes]) -> None:
    """The ``docker load`` archive of ``image_id`` from the overlay2 store at ``root`` into
    ``out``, holding the layers past the first ``skip`` only."""
    config = image_config(root, image_id)
    diff_ids = json.loads(config)["rootfs"]["diff_ids"]
    chains = chain_ids(diff_ids)
    paths = [f"{_hex(diff_id)}/layer.tar" for diff_id in diff_ids]
    with tarfile.open(fileobj=out, mode="w|") as archive:
        _add(archive, f"{_hex(image_id)}.json", io.BytesIO(config), len(config))
        for number in range(skip, len(diff_ids)):
            with tempfile.TemporaryFile(prefix="podium-layer-") as layer:
                _layer_tar(root, chains[number], layer)
                _add(archive, paths[number], layer, layer.tell())
        manifest = json.dumps([{"Config": f"{_hex(image_id)}.json", "Layers": paths}]).encode()
        _add(archive, "manifest.json", io.BytesIO(manifest), len(manifest))


def _add(archive: tarfile.TarFile, name: str, data: IO[bytes], size: int) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mode = size, 0o644
    data.seek(0)
    archive.addfile(info, data)


def _layer_tar(root: Path, chain_id: str, out: IO[bytes]) -> None:
    """The layer's tar, byte for byte as Docker wrote it when it made the layer."""
    record = root / "image/overlay2/layerdb/sha256" / _hex(chain_id)
    try:
        cache_id = (record / "cache-id").read_text().strip()
        entries = (record / "tar-split.json.gz").open("rb")
    except OSError as exc:
        raise LayerStoreError(f"layer {chain_id}: not in {root} ({exc})") from None
    diff = root / "overlay2" / cache_id / "diff"
    with entries, gzip.open(entries, "rt", encoding="utf-8") as lines:
        for line in lines:
            entry = json.loads(line)
            if entry["type"] == 2:  # a segment: header or padding bytes
                out.write(base64.b64decode(entry.get("payload") or ""))
            elif entry["type"] == 1 and entry.get("size", 0) > 0:  # a file's contents
                for chunk in _contents(diff, _name(entry), entry["size"]):
                    out.write(chunk)


def _name(entry: dict[str, object]) -> str:
    raw = entry.get("name_raw")
    if isinstance(raw, str) and raw:
        return base64.b64decode(raw).decode("utf-8", errors="surrogateescape")
    return str(entry.get("name") or "")


def _contents(diff: Path, name: str, size: int) -> Iterator[bytes]:
    """``size`` bytes of the regular file ``name`` under ``diff``; no link is followed."""
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if not parts or ".." in parts:
        raise LayerStoreError(f"{name!r}: not a path inside the layer")
    flags = os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    folder = os.open(diff, flags | os.O_DIRECTORY)
    try:
        for part in parts[:-1]:
            inner = os.open(part, flags | os.O_DIRECTORY, dir_fd=folder)
            os.close(folder)
            folder = inner
        handle = os.open(parts[-1], flags, dir_fd=folder)
    except OSError as exc:
        raise LayerStoreError(f"{name!r}: cannot be read from the layer ({exc})") from None
    finally:
        os.close(folder)
    with os.fdopen(handle, "rb") as source:
        if not stat.S_ISREG(os.fstat(source.fileno()).st_mode):
            raise LayerStoreError(f"{name!r}: not a regular file in the layer")
        left = size
        while left:
            chunk = source.read(min(CHUNK, left))
            if not chunk:
                raise LayerStoreError(f"{name!r}: shorter than its record")
            left -= len(chunk)
            yield chunk
