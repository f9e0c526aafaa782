"""A live challenge written as a bundle that imports into an empty database as the same
challenge: its settings, pages, logo, phases (their quotas too), tasks, the stored split
bundles byte for byte (each digest checked as it is copied, and written beside it), the corpus,
the starter-kit files at their paths, the declared baselines' build contexts and the overall
ranking as declared. Private test
splits are written only for the challenge's organisers (``private=True``).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import IO, Any

from ruamel.yaml import YAML

from evaluator.zips import write_zip
from leaderboard.challenge_bundle import assets, baselines, state
from leaderboard.challenge_bundle.assets import copy_stored
from leaderboard.challenge_bundle.loader import moment
from leaderboard.challenge_bundle.schema import BUNDLE_VERSION, PAGES, TASK_FIELDS
from leaderboard.challenge_bundle.source import MANIFEST
from leaderboard.models import Challenge, Task
from leaderboard.pipeline.bundles import corpus_name, corpus_sha256


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
        copy_stored(corpus_name(challenge), sha256, out / "corpus.tar")
        head["corpus"] = "corpus.tar"
    if logo := assets.export_logo(challenge, out):
        head["logo"] = logo
    left_out: list[str] = []
    tasks = [_task(task, out, private, left_out) for task in challenge.tasks.all()]
    document = {
        "bundle_version": BUNDLE_VERSION,
        "challenge": head,
        "phases": [
            {
                "name": p.name,
                "starts_at": moment(p.starts_at),
                "ends_at": moment(p.ends_at),
                "quotas": {"per_day": p.quota_per_day, "total": p.quota_total},
            }
            for p in challenge.phases.all()
        ],
        "tasks": tasks,
        "baselines": baselines.export(challenge, out),
    }
    if challenge.overall:
        document["overall"] = challenge.overall
    if public := state.public_board(challenge):
        document["public_board"] = public
    head["kit_files"] = assets.export_kit_files(challenge, out)  # last: beside what is written
    with (out / MANIFEST).open("w", encoding="utf-8") as f:
        yaml = YAML(typ="safe", pure=True)
        yaml.default_flow_style = False
        yaml.sort_base_mapping_type_on_output = False  # type: ignore[assignment]
        yaml.dump(document, f)
    return left_out


def _task(task: Task, out: Path, private: bool, left_out: list[str]) -> dict[str, Any]:
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
        stored = split.bundle.name  # a FieldFile is false when its name is
        if not stored:
            continue
        name = f"splits/{task.task_id}/{split.kind}.tar"
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        copy_stored(stored, split.sha256, out / name)
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


def export_zip(challenge: Challenge, out: IO[bytes], private: bool) -> list[str]:
    """``export`` as a zip written to ``out``. Returns the private splits left out."""
    with tempfile.TemporaryDirectory(prefix="podium-export-") as scratch:
        left_out = export(challenge, Path(scratch) / challenge.slug, private)
        write_zip(Path(scratch) / challenge.slug, out)
    return left_out
