"""A live challenge written as a bundle that imports into an empty database as the same
challenge: its settings, pages, phases, tasks, the stored split bundles byte for byte (each
digest checked as it is copied, and written beside it) and the corpus. Private test splits
are written only for the challenge's organisers (``private=True``).
"""

from __future__ import annotations

import hashlib
import tempfile
from pathlib import Path
from typing import IO, Any

from django.core.files.storage import default_storage
from ruamel.yaml import YAML

from evaluator.archives import write_zip
from leaderboard.challenge_bundle import state
from leaderboard.challenge_bundle.loader import moment
from leaderboard.challenge_bundle.schema import BUNDLE_VERSION, PAGES, TASK_FIELDS
from leaderboard.challenge_bundle.source import MANIFEST
from leaderboard.models import Challenge
from workers.pipeline.bundles import BundleError, corpus_name, corpus_sha256

_CHUNK = 1024 * 1024


def export(challenge: Challenge, out: Path, private: bool) -> list[str]:
    """Write ``challenge`` as a bundle directory at ``out`` (created; must not exist, or be
    empty). Returns the private splits left out."""
    out.mkdir(parents=True, exist_ok=True)
    if any(out.iterdir()):
        raise FileExistsError(f"{out}: not empty")
    head: dict[str, Any] = {**state.head(challenge), "pages": {}}
    for page in PAGES:
        if text := getattr(challenge, page):
            (out / "pages").mkdir(exist_ok=True)
            (out / "pages" / f"{page}.md").write_text(text, encoding="utf-8")
            head["pages"][page] = f"pages/{page}.md"
    if sha256 := corpus_sha256(challenge):
        _copy(corpus_name(challenge), sha256, out / "corpus.tar")
        head["corpus"] = "corpus.tar"
    left_out: list[str] = []
    tasks = [_task(task, out, private, left_out) for task in challenge.tasks.all()]
    document = {
        "bundle_version": BUNDLE_VERSION,
        "challenge": head,
        "phases": [
            {"name": p.name, "starts_at": moment(p.starts_at), "ends_at": moment(p.ends_at)}
            for p in challenge.phases.all()
        ],
        "tasks": tasks,
    }
    with (out / MANIFEST).open("w", encoding="utf-8") as f:
        yaml = YAML(typ="safe", pure=True)
        yaml.default_flow_style = False
        yaml.sort_base_mapping_type_on_output = False  # type: ignore[assignment]
        yaml.dump(document, f)
    return left_out


def _task(task, out: Path, private: bool, left_out: list[str]) -> dict[str, Any]:
    written: dict[str, Any] = {"id": task.task_id}
    for place, field in TASK_FIELDS:
        into = written
        for key in place[:-1]:
            into = into.setdefault(key, {})
        into[place[-1]] = getattr(task, field)
    splits = []
    for split in task.splits.current():
        if split.is_private and not private:
            left_out.append(str(split))
            continue
        if not split.bundle:
            continue
        name = f"splits/{task.task_id}/{split.kind}.tar"
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        _copy(split.bundle.name, split.sha256, out / name)
        splits.append(
            {
                "kind": split.kind,
                "files": name,
                "sha256": split.sha256,
                "visibility": split.visibility,
                "reveal_at": moment(split.reveal_at),
            }
        )
    written["splits"] = splits
    return written


def _copy(name: str, sha256: str, target: Path) -> None:
    """A stored file copied to ``target``, its digest checked on the way."""
    digest = hashlib.sha256()
    with default_storage.open(name, "rb") as stored, target.open("wb") as copy:
        while chunk := stored.read(_CHUNK):
            digest.update(chunk)
            copy.write(chunk)
    if digest.hexdigest() != sha256:
        raise BundleError(f"{name}: stored with sha256 {sha256}, reads {digest.hexdigest()}")


def export_zip(challenge: Challenge, out: IO[bytes], private: bool) -> list[str]:
    """``export`` as a zip written to ``out``. Returns the private splits left out."""
    with tempfile.TemporaryDirectory(prefix="podium-export-") as scratch:
        left_out = export(challenge, Path(scratch) / challenge.slug, private)
        write_zip(Path(scratch) / challenge.slug, out)
    return left_out
