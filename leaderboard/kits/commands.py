"""The local evaluation commands a starter kit's README writes out for each task: the runner
(``python -m workers.cli``) with the task's limits and setting, and the scorer (``python -m
evaluator score``) with its benchmark's settings, on the kit's split of the task."""

from __future__ import annotations

from dataclasses import dataclass

from leaderboard.models import Split, Task
from leaderboard.models.challenge import RUN_LIMITS, RUN_POLICIES
from leaderboard.pipeline.run import limits_for
from workers.limits import as_options


def split_path(split: Split) -> str:
    """Where a split lies in the kit."""
    return f"data/{split.task.task_id}/{split.kind}"


@dataclass(frozen=True)
class TaskCommands:
    run: str  # python -m workers.cli ...
    score: str  # python -m evaluator score ...
    split: str  # the split directory they use ("" when the kit has none of this task)


def _score_options(task: Task, setting: str) -> list[str]:
    """The task's benchmark settings as ``python -m evaluator score`` options, scoring the one
    setting run (``evaluated`` is the list of settings a server run covers)."""
    options = [f"--settings {setting}"] if setting else []
    for key, value in task.effective_settings.items():
        if key != "evaluated":
            options.append(f"--{key.replace('_', '-')} {value}")
    return options


def task_commands(task: Task, splits: list[Split], corpus: bool) -> TaskCommands:
    mine = [s for s in splits if s.task_id == task.pk]
    directory = split_path(mine[0]) if mine else f"data/{task.task_id}/validation"
    setting = task.run_settings()[0]
    benchmark = f" --protocol {task.benchmark}"
    out = f"runs/{task.task_id}{'-' + setting if setting else ''}"
    limits = limits_for(task)
    run = [
        f"python -m workers.cli --image my-agent{benchmark} --task {task.task_id}",
        f"--split {directory}" + (f" --setting {setting}" if setting else ""),
        f"--out {out}/predictions.jsonl --report {out}/report.json",
        " ".join(as_options(limits, RUN_LIMITS)),
        " ".join(as_options(limits, RUN_POLICIES)),
    ]
    if corpus and task.declared().search_corpus and task.declared().searches:
        run.append("--corpus corpus")
    score = [
        f"python -m evaluator score{benchmark} --split {directory}",
        " ".join(
            [
                f"--predictions {out}/predictions.jsonl --out {out}/scores",
                *_score_options(task, setting),
            ]
        ),
    ]
    return TaskCommands(
        run=" \\\n    ".join(run), score=" \\\n    ".join(score), split=directory if mine else ""
    )
