"""A challenge as one canonical document, from the database (``live``) or from a bundle whose
splits and corpus have been digested (``wanted``), and the diff of two of them.

Equal documents mean an import changes nothing. Pages appear by their text's sha256, splits
and the corpus by their stored bundle's sha256, dates in UTC, a task's settings with the
benchmark's defaults filled in, every field with its default where the bundle is silent.
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Any

from evaluator.benchmarks import benchmark_class
from evaluator.records import EvaluatorError
from leaderboard.challenge_bundle.baselines import live as declared_baselines
from leaderboard.challenge_bundle.loader import Bundle, moment, task_values
from leaderboard.challenge_bundle.schema import PAGES, TASK_FIELDS
from leaderboard.models import Challenge, Split, current_splits
from leaderboard.pipeline.bundles import corpus_sha256
from podium.downloads import file_sha256

Canonical = dict[str, Any]
# a phase: name, start, end, quota per day, quota in all (stored: datetimes; declared: text)
PhaseRow = tuple[str, datetime | str | None, datetime | str | None, int | None, int | None]


def text_digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest() if text else ""


def _settings(benchmark: str, settings: Any) -> Any:
    try:
        return benchmark_class(benchmark).check_settings(settings)
    except EvaluatorError:
        return settings


def _task(values: dict[str, Any], splits: list[Canonical]) -> Canonical:
    flat = {".".join(place): values[field] for place, field in TASK_FIELDS}
    flat["settings"] = _settings(values["benchmark"], values["settings"])
    return {**flat, "splits": sorted(splits, key=lambda s: s["kind"])}


def head(challenge: Challenge) -> Canonical:
    """The challenge's own fields as ``challenge.yaml`` names them (pages and corpus apart)."""
    return {
        "slug": challenge.slug,
        "title": challenge.name,
        "description": challenge.description,
        "status": "published" if challenge.is_published else "draft",
        "package_index": challenge.package_index,
        "kit_includes_corpus": challenge.kit_includes_corpus,
        "registration_approval": challenge.registration_approval,
    }


def live(challenge: Challenge) -> Canonical:
    """``challenge`` as it is now."""
    tasks = {}
    for task in challenge.tasks.prefetch_related(current_splits()):
        values = {field: getattr(task, field) for _, field in TASK_FIELDS}
        splits = [_split(s.kind, s.sha256, s.visibility, s.reveal_at) for s in task.splits.all()]
        tasks[task.task_id] = _task(values, splits)
    return _document(
        challenge={
            **head(challenge),
            "pages": {page: text_digest(getattr(challenge, page)) for page in PAGES},
            "corpus": corpus_sha256(challenge),
            "logo": challenge.logo_sha256 or None,
            "kit_files": {f.path: f.sha256 for f in challenge.kit_files.all()},
        },
        phases=[
            (p.name, p.starts_at, p.ends_at, p.quota_per_day, p.quota_total)
            for p in challenge.phases.all()
        ],
        tasks=tasks,
        baselines=declared_baselines(challenge),
        overall=challenge.overall,
        public_board=public_board(challenge),
    )


def public_board(challenge: Challenge) -> Canonical:
    """challenge.yaml's ``public_board`` section of ``challenge`` (what it sets only)."""
    rules = {"freeze_days": challenge.freeze_days, "ladder_threshold": challenge.ladder_threshold}
    return {name: value for name, value in rules.items() if value is not None}


def wanted(
    bundle: Bundle,
    split_sha256: dict[tuple[str, str], str],
    corpus: str | None,
    baselines: dict[str, Canonical] | None = None,
) -> Canonical:
    """What importing ``bundle`` makes of its challenge; ``split_sha256``: each split's bundle
    digest by (task id, kind); ``corpus``: its corpus's digest (None: keeps the stored one);
    ``baselines``: the declared baselines (``baselines.wanted``)."""
    value = bundle.value
    head = value["challenge"]
    tasks = {}
    for task in value.get("tasks", []):
        splits = [
            _split(
                s["kind"],
                split_sha256[(task["id"], s["kind"])],
                s.get("visibility", Split.Visibility.PUBLIC.value),
                s.get("reveal_at"),
            )
            for s in task.get("splits", [])
        ]
        tasks[task["id"]] = _task(task_values(task), splits)
    return _document(
        challenge={
            "slug": head["slug"],
            "title": head["title"],
            "description": head.get("description", ""),
            "status": head.get("status", "draft"),
            "package_index": head.get("package_index", ""),
            "kit_includes_corpus": head.get("kit_includes_corpus", False),
            "registration_approval": head.get("registration_approval", False),
            "pages": {page: text_digest(bundle.page(page)) for page in PAGES},
            "corpus": corpus,
            "logo": file_sha256(bundle.logo) if bundle.logo else None,
            "kit_files": {path: file_sha256(f) for path, f in bundle.kit_files().items()},
        },
        phases=[
            (
                p["name"],
                p["starts_at"],
                p["ends_at"],
                p.get("quotas", {}).get("per_day"),
                p.get("quotas", {}).get("total"),
            )
            for p in value.get("phases", [])
        ],
        tasks=tasks,
        baselines=baselines or {},
        overall=value.get("overall", {}),
        public_board={k: v for k, v in value.get("public_board", {}).items() if v is not None},
    )


def _split(kind: str, sha256: str, visibility: str, reveal_at: Any) -> Canonical:
    return {
        "kind": kind,
        "sha256": sha256,
        "visibility": visibility,
        "reveal_at": moment(reveal_at),
    }


def _document(
    challenge: Canonical,
    phases: list[PhaseRow],
    tasks: dict[str, Canonical],
    baselines: dict[str, Canonical],
    overall: Canonical,
    public_board: Canonical,
) -> Canonical:
    return {
        "challenge": challenge,
        "phases": {
            name: {
                "starts_at": moment(s),
                "ends_at": moment(e),
                "quotas": {"per_day": per_day, "total": total},
            }
            for name, s, e, per_day, total in phases
        },
        "tasks": tasks,
        "task_order": list(tasks),
        "baselines": baselines,
        "overall": dict(overall),
        "public_board": dict(public_board),
    }


def _flat(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict) and value:
        out: dict[str, Any] = {}
        for key, item in value.items():
            out |= _flat(item, f"{prefix}.{key}" if prefix else str(key))
        return out
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        return {k: v for item in value for k, v in _flat(item, f"{prefix}[{item['kind']}]").items()}
    return {prefix: value}


def diff(before: Canonical | None, after: Canonical) -> list[str]:
    """What changes from ``before`` (None: nothing yet) to ``after``, one line per field:
    ``+ field: value``, ``- field: value``, ``~ field: old -> new``."""
    old, new = _flat(before or {}), _flat(after)
    lines = []
    for key in sorted(old.keys() | new.keys()):
        if key not in old:
            lines.append(f"+ {key}: {_shown(new[key])}")
        elif key not in new:
            lines.append(f"- {key}: {_shown(old[key])}")
        elif old[key] != new[key]:
            lines.append(f"~ {key}: {_shown(old[key])} -> {_shown(new[key])}")
    return lines


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
