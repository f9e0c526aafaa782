"""A challenge's overall ranking across its tasks, as its bundle declares it (``overall:`` in
``challenge.yaml``, stored as written on ``Challenge.overall``): which tasks count, how a
team's places on them make one score, and in which setting and by which metric each counts.

- ``average-rank``: a team's score is the mean of its ranks on the counted tasks' boards (each
  in its declared setting); a team missing from a board counts as ranked after every team on
  it. Lower is better.
- ``mean``: a team's score is the mean of its entries' chosen metrics (default: each task's
  primary metric); a team missing a counted task has no overall entry. The metrics are of one
  direction and one scale, so their mean means something.

``problems`` says what is wrong with a declaration (the bundle's loader reports each at its
place); ``Overall.of`` reads a stored one. The board itself is ``leaderboard.overall_board``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evaluator.seam import Metric
from leaderboard.models import Challenge, Task

AVERAGE_RANK = "average-rank"
MEAN = "mean"
METHODS = (AVERAGE_RANK, MEAN)
DEFAULT_TITLE = "Overall"
# stored scales whose values are comparable: both fractions (0 to 1, or -1 to 1)
_SCALE_FAMILY = {"signed_fraction": "fraction"}

Place = tuple[str | int, ...]  # a field's place under ``overall`` in challenge.yaml


@dataclass(frozen=True)
class Counted:
    """One task as the overall ranking counts it: its board in ``setting``, and for ``mean``
    its ``metric`` (the task's primary metric by default)."""

    task_id: str
    setting: str
    metric: str


@dataclass(frozen=True)
class Overall:
    """A challenge's overall ranking as declared."""

    title: str
    method: str
    counted: tuple[Counted, ...]

    @property
    def lower_is_better(self) -> bool:
        return self.method == AVERAGE_RANK

    @classmethod
    def of(cls, challenge: Challenge) -> Overall | None:
        """``challenge``'s declared overall ranking over its tasks (None: it declares none)."""
        declared: dict[str, Any] = challenge.overall or {}
        return cls.read(declared, list(challenge.tasks.all())) if declared else None

    @classmethod
    def read(cls, declared: Mapping[str, Any], tasks: Sequence[Task]) -> Overall:
        """A declaration (checked by ``problems``) over the challenge's ``tasks``."""
        by_id = {t.task_id: t for t in sorted(tasks, key=lambda t: (t.order, t.task_id))}
        ids = declared.get("tasks") or list(by_id)
        settings, metrics = declared.get("settings", {}), declared.get("metrics", {})
        counted = tuple(
            Counted(
                task_id,
                settings.get(task_id) or by_id[task_id].run_settings()[0],
                metrics.get(task_id) or by_id[task_id].primary_metric,
            )
            for task_id in ids
            if task_id in by_id
        )
        return cls(declared.get("title") or DEFAULT_TITLE, declared["method"], counted)


def _metric(task: Task, name: str, setting: str) -> Metric | None:
    """The metric ``name`` of ``task`` when it may rank runs of ``setting`` (as a primary
    metric may); None when it may not."""
    benchmark = task.scoring()
    found = next((m for m in benchmark.ranking_metrics() if m.name == name), None)
    return found if found is not None and benchmark.in_setting(found, setting) else None


def problems(declared: Mapping[str, Any], tasks: Sequence[Task]) -> list[tuple[Place, str]]:
    """What is wrong with ``declared`` (an ``overall`` section of the schema's shape) over the
    bundle's ``tasks`` (unsaved ones will do, their own rules checked first): each problem
    with its place under ``overall``."""
    by_id = {t.task_id: t for t in tasks}
    known = ", ".join(by_id) or "none"
    found: list[tuple[Place, str]] = []
    ids = list(declared.get("tasks") or by_id)
    for index, task_id in enumerate(declared.get("tasks", [])):
        if task_id not in by_id:
            found.append((("tasks", index), f"no task {task_id!r} in this bundle (tasks: {known})"))
    counted = [t for t in ids if t in by_id]
    if not counted:
        found.append(((), "no task to rank: the bundle declares none"))
    names = ", ".join(counted)
    settings: Mapping[str, str] = declared.get("settings", {})
    unset: set[str] = set()  # counted tasks declared in a setting they lack
    for task_id, setting in settings.items():
        if task_id not in counted:
            found.append((("settings", task_id), f"{task_id!r} is not counted (counted: {names})"))
            continue
        evaluated = by_id[task_id].run_settings()
        if setting not in evaluated:
            valid = f"its settings are {', '.join(evaluated)}" if any(evaluated) else "it has none"
            found.append((("settings", task_id), f"{task_id} has no setting {setting!r}: {valid}"))
            unset.add(task_id)
    metrics: Mapping[str, str] = declared.get("metrics", {})
    if metrics and declared.get("method") != MEAN:
        found.append(
            (("metrics",), f"{declared.get('method')} ranks by each task's board: metrics are "
             "for method mean only")
        )  # fmt: skip
        return found
    for task_id in metrics:
        if task_id not in counted:
            found.append((("metrics", task_id), f"{task_id!r} is not counted (counted: {names})"))
    if declared.get("method") != MEAN:
        return found
    chosen: list[tuple[str, Metric]] = []
    for task_id in (t for t in counted if t not in unset):
        task = by_id[task_id]
        name = metrics.get(task_id) or task.primary_metric
        setting = settings.get(task_id) or task.run_settings()[0]
        metric = _metric(task, name, setting)
        if metric is None:
            benchmark = task.scoring()
            ranking = benchmark.ranking_metrics()
            choices = ", ".join(m.name for m in ranking if benchmark.in_setting(m, setting))
            place: Place = ("metrics", task_id) if task_id in metrics else ()
            found.append((place, f"{name!r} cannot rank {task_id}'s runs: choose one of {choices}"))
        else:
            chosen.append((task_id, metric))
    if len({m.higher_is_better for _, m in chosen}) > 1:
        ways = "; ".join(
            f"{t}: {m.name} ({'higher' if m.higher_is_better else 'lower'} is better)"
            for t, m in chosen
        )
        found.append((("metrics",), f"a mean of metrics ranked in opposite directions: {ways}"))
    if len({_SCALE_FAMILY.get(m.scale, m.scale) for _, m in chosen}) > 1:
        scales = "; ".join(f"{t}: {m.name} ({m.scale})" for t, m in chosen)
        found.append((("metrics",), f"a mean of metrics on different scales: {scales}"))
    return found
