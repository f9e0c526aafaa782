"""What a submission is evaluated on: the tasks its team chooses and, where organisers allow it
(``Task.splits_selectable``), which of a task's splits.

Nothing chosen means every task with data. Naming splits alone chooses their tasks. A task whose
splits are not selectable runs on all of them. The choice is kept on the submission
(``SubmissionTask``: a task and the split kinds chosen, none for every split) so that a split
imported later is run only where the team wanted it (``add_missing_runs``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ValidationError

from leaderboard.models import Challenge, Split, Submission, SubmissionTask, Task


@dataclass(frozen=True)
class Choice:
    """A team's choice, as it arrives: task ids and ``<task id>/<split kind>`` names."""

    tasks: tuple[str, ...] = ()
    splits: tuple[str, ...] = ()

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> Choice:
        """From validated form or serializer data (``tasks``, ``splits``: lists; missing: ())."""
        return cls(tasks=tuple(data.get("tasks") or ()), splits=tuple(data.get("splits") or ()))


@dataclass(frozen=True)
class Chosen:
    """A choice checked against the challenge: the splits to run, and per task what to record
    (the split kinds chosen; ``()`` for every split)."""

    splits: list[Split]
    kinds: dict[int, tuple[str, ...]]

    @property
    def tasks(self) -> list[Task]:
        return list({split.task_id: split.task for split in self.splits}.values())

    def record(self, submission: Submission) -> None:
        """Keep the choice on a saved submission."""
        SubmissionTask.objects.bulk_create(
            SubmissionTask(submission=submission, task=task, split_kinds=list(self.kinds[task.pk]))
            for task in self.tasks
        )


KIND_ORDER = {kind: place for place, kind in enumerate(Split.Kind.values)}


def evaluated_splits(challenge: Challenge) -> list[Split]:
    """Every (task, split) pair a submission may run on: each split whose data is imported, in
    the tasks' order, then validation, public test, private test."""
    splits = Split.objects.current().filter(task__challenge=challenge).exclude(bundle="")
    return sorted(
        splits.select_related("task"),
        key=lambda s: (s.task.order, s.task.task_id, KIND_ORDER[s.kind]),
    )


def resolve(challenge: Challenge, choice: Choice) -> Chosen:
    """Check ``choice`` against what ``challenge`` evaluates now; ``ValidationError`` with
    messages under ``tasks`` and ``splits`` naming each wrong entry and what may be chosen."""
    available = evaluated_splits(challenge)
    if not available:
        raise ValidationError(f"{challenge.name} has no split with data to evaluate yet")
    by_task: dict[str, list[Split]] = {}
    for split in available:
        by_task.setdefault(split.task.task_id, []).append(split)
    errors: dict[str, list[str]] = {"tasks": [], "splits": []}
    named = _named_splits(choice.splits, by_task, errors["splits"])
    for task_id in choice.tasks:
        if task_id not in by_task:
            errors["tasks"].append(
                f"{challenge.slug} has no task {task_id!r} to evaluate on "
                f"(tasks: {', '.join(by_task)})"
            )
    wanted = set(choice.tasks or named or by_task)
    tasks = [task_id for task_id in by_task if task_id in wanted]  # the challenge's order
    for task_id, asked in named.items():
        if choice.tasks and task_id not in choice.tasks:
            unchosen = (f"'{task_id}/{kind}': task {task_id} is not chosen" for kind in asked)
            errors["splits"] += unchosen
    if any(errors.values()):
        raise ValidationError({field: found for field, found in errors.items() if found})
    splits: list[Split] = []
    kinds: dict[int, tuple[str, ...]] = {}
    for task_id in tasks:
        offered = by_task[task_id]
        kinds_named = set(named.get(task_id, ())) or {s.kind for s in offered}
        taken = [s for s in offered if s.kind in kinds_named]
        splits += taken
        every = len(taken) == len(offered)
        kinds[offered[0].task_id] = () if every else tuple(s.kind for s in taken)
    return Chosen(splits=splits, kinds=kinds)


def _named_splits(
    names: Iterable[str], by_task: dict[str, list[Split]], errors: list[str]
) -> dict[str, list[str]]:
    """``<task id>/<kind>`` names -> the kinds named per task; problems appended to ``errors``."""
    named: dict[str, list[str]] = {}
    for name in dict.fromkeys(names):
        task_id, _, kind = name.partition("/")
        offered = by_task.get(task_id)
        if not kind:
            errors.append(f"{name!r}: name a split as task-id/split-kind, e.g. {_example(by_task)}")
        elif offered is None:
            errors.append(f"{name!r}: no task {task_id!r} to evaluate on")
        elif not offered[0].task.splits_selectable:
            errors.append(
                f"{name!r}: task {task_id} is evaluated on every split (its organisers do not "
                "let teams choose)"
            )
        elif kind not in {s.kind for s in offered}:
            kinds = ", ".join(s.kind for s in offered)
            errors.append(f"{name!r}: task {task_id} has no split {kind!r} (splits: {kinds})")
        else:
            named.setdefault(task_id, []).append(kind)
    return named


def _example(by_task: dict[str, list[Split]]) -> str:
    task_id, splits = next(iter(by_task.items()))
    return f"{task_id}/{splits[0].kind}"


def wanted_splits(submission: Submission) -> list[Split]:
    """The splits with data now that ``submission``'s recorded choice takes (every split of
    the challenge for a submission with no recorded choice)."""
    chosen = list(submission.chosen_tasks.all())
    available = evaluated_splits(submission.challenge)
    if not chosen:
        return available
    return [split for split in available if any(c.takes(split) for c in chosen)]
