"""Split versions in a bundle import (``docs/challenge-bundle.md``): a changed split that has
runs becomes its next version (``leaderboard.splits.save_split`` makes it); the diff says so
before anything is applied, and the organiser chooses whether its runs are redone.
"""

from __future__ import annotations

from typing import Any, TypedDict, cast

from django.db.models import Count, QuerySet
from django.template.defaultfilters import pluralize
from django_stubs_ext import WithAnnotations

from leaderboard.challenge_bundle import source
from leaderboard.challenge_bundle.problems import BundleInvalid, Problem
from leaderboard.models import Challenge, Split
from leaderboard.submitting import runs_on_new_version


class RunCount(TypedDict):
    n: int  # the split's runs (in this version)


def diff_lines(challenge: Challenge, after: Any) -> list[str]:
    """The diff's lines for the current splits whose data the bundle changes and that have
    runs: each becomes a new version. ``BundleInvalid`` naming each split with runs (in any
    of its versions) that the bundle removes."""
    problems, lines = [], []
    splits = Split.objects.filter(task__challenge=challenge).select_related("task")
    counted = splits.annotate(n=Count("runs")).order_by("task__order", "kind", "version")
    # SplitQuerySet is not generic, so its order_by() drops the type that annotate() gave
    for split in cast("QuerySet[WithAnnotations[Split, RunCount]]", counted):
        task_id = split.task.task_id
        wanted = after["tasks"].get(task_id, {}).get("splits", [])
        new = next((s for s in wanted if s["kind"] == split.kind), None)
        if new is None and split.n:
            problems.append(
                Problem(
                    source.MANIFEST,
                    None,
                    f"tasks[{task_id}].splits[{split.kind}]",
                    f"the bundle removes split {split}, which has {split.n} "
                    f"run{pluralize(split.n)}: a split with results is never deleted by an "
                    "import (change its data instead: a new version), or delete the runs first",
                )
            )
        elif new is not None and split.is_current and split.n and new["sha256"] != split.sha256:
            lines.append(
                f"split {task_id}/{split.kind}: new version {split.version + 1} (version "
                f"{split.version} keeps its {split.n} run{pluralize(split.n)})"
            )
    if problems:
        raise BundleInvalid(problems)
    return lines


def redo(versions: list[tuple[Split, Split]], redo_runs: bool) -> tuple[list[str], int]:
    """For each (superseded, new version) pair: with ``redo_runs``, runs on the new version
    for the submissions of the one it supersedes, sent when the import commits. A line per new
    version saying what was done, and the runs queued."""
    lines, queued = [], 0
    for old, new in versions:
        where = f"split {new.task.task_id}/{new.kind}: version {new.version}"
        if not redo_runs:
            lines.append(f"{where} starts with no runs (runs not redone)")
            continue
        runs = runs_on_new_version(old, new)
        queued += len(runs)
        lines.append(f"{where}: {len(runs)} run{pluralize(len(runs))} queued (runs redone)")
    return lines, queued
