"""The models a challenge lets agents load by their Hugging Face hub id, stored once per node.

The original platform downloaded the models a submission's ``aicrowd.json`` listed into the
Hugging Face cache before the agent started; agents then load ``vllm.LLM("<hub id>")`` or
``from_pretrained("<hub id>")`` as usual. Podium keeps an organiser's copies in a store laid out
as that cache (``<store>/hub/models--<org>--<name>/snapshots/<snapshot>/...`` with
``refs/<revision>`` naming the snapshot), and mounts each model a submission declared read-only
into its containers at ``MODEL_DIR`` with ``HF_HOME`` set and the hub offline
(``model_environment``): the hub id resolves exactly as it did there, and nothing else is seen.

The store is a local directory per worker node (``PODIUM_MODEL_STORE``), filled by
``manage.py register_model`` from a directory of the model's files (``save_pretrained`` or a
hub download), or shared between nodes read-only (a network file system).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

MODEL_DIR = "/podium/hf"  # HF_HOME inside agent containers
HUB_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,95}/[A-Za-z0-9][A-Za-z0-9_.-]{0,95}")
REVISION = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")


class ModelStoreError(ValueError):
    """A model that cannot be stored or found; the message says which and why."""


@dataclass(frozen=True)
class StoredModel:
    hub_id: str
    revision: str
    snapshot: str  # 40 hex digits: the content of the files
    size_bytes: int

    @property
    def cache_name(self) -> str:
        """The model's folder in a Hugging Face cache's ``hub`` directory."""
        return cache_name(self.hub_id)


def cache_name(hub_id: str) -> str:
    return "models--" + hub_id.replace("/", "--")


def check_hub_id(hub_id: str, revision: str = "main") -> None:
    if not HUB_ID.fullmatch(hub_id) or ".." in hub_id:
        raise ModelStoreError(f"{hub_id!r} is not a hub id (organisation/name)")
    if not REVISION.fullmatch(revision) or ".." in revision:
        raise ModelStoreError(f"{revision!r} is not a revision name")


def register(store: Path, hub_id: str, source: Path, revision: str = "main") -> StoredModel:
    """Copy the model files in ``source`` into ``store`` as ``hub_id`` at ``revision``.

    The snapshot is named by the files' content, so registering the same files again changes
    nothing and other files make a new snapshot (the revision then names it)."""
    check_hub_id(hub_id, revision)
    if not source.is_dir():
        raise ModelStoreError(f"{source}: not a directory of model files")
    files = sorted(p for p in source.rglob("*") if p.is_file() and not p.is_symlink())
    if not files:
        raise ModelStoreError(f"{source}: no files")
    digest = hashlib.sha1()  # the cache's snapshot names are 40 hex digits, as commit ids are
    for path in files:
        digest.update(str(path.relative_to(source)).encode() + b"\0")
        digest.update(_file_digest(path).encode() + b"\0")
    snapshot = digest.hexdigest()
    root = store / "hub" / cache_name(hub_id)
    target = root / "snapshots" / snapshot
    if not target.is_dir():
        (root / "snapshots").mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(dir=root / "snapshots", prefix=".partial-"))
        for path in files:
            copy = staging / path.relative_to(source)
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, copy)
            os.chmod(copy, 0o444)
        _open_to_all(staging)
        staging.rename(target)
    (root / "refs").mkdir(exist_ok=True)
    ref = root / "refs" / revision
    ref.with_suffix(".partial").write_text(snapshot)
    ref.with_suffix(".partial").replace(ref)
    _open_to_all(store)
    return StoredModel(hub_id, revision, snapshot, sum(p.stat().st_size for p in files))


def stored(store: Path, hub_id: str, revision: str = "main") -> Path:
    """The model's folder in ``store`` (what is mounted), checked to hold ``revision``."""
    check_hub_id(hub_id, revision)
    root = store / "hub" / cache_name(hub_id)
    ref = root / "refs" / revision
    if not ref.is_file() or not (root / "snapshots" / ref.read_text().strip()).is_dir():
        raise ModelStoreError(
            f"model {hub_id}@{revision} is not in this node's model store ({store}): "
            "register it there (manage.py register_model)"
        )
    return root


def model_environment() -> dict[str, str]:
    """What an agent container gets, models or not: the hub offline, the cache at MODEL_DIR."""
    return {
        "HF_HOME": MODEL_DIR,
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
    }


def _file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        while chunk := stream.read(1024 * 1024):
            digest.update(chunk)
    return digest.hexdigest()


def _open_to_all(directory: Path) -> None:
    """Readable by the agent's uid (another user than the worker's): directories 0755."""
    for path in [directory, *(p for p in directory.rglob("*") if p.is_dir())]:
        os.chmod(path, 0o755)
