"""The organisers' "repeat the final entries" of a split (issue 37, item 4): from the panel,
``POST /api/splits/<id>/repeat/`` and ``manage.py challenge repeat``.

Every ranked entry of the split's boards (each setting; baselines apart) gets runs ``trial`` 1
to k - 1 of its submission on that split and setting, k being the task's ``final_repeats``:
created and sent as any run (``submitting.add_repeats``, as "evaluate on the splits added
since" does), counted against no quota (quotas count submissions), logged per submission
(``SubmissionAction``, kind ``repeat``) with the reason its team reads. What the boards make
of them: ``leaderboard.repeats``.
"""

from __future__ import annotations

from collections import defaultdict

from leaderboard import board_store
from leaderboard.models import EvaluationRun, Split, Submission, SubmissionAction
from leaderboard.permissions import User
from leaderboard.run_actions import RunActionRefused
from leaderboard.submission_actions import act_on_submissions
from leaderboard.submitting.submit import add_repeats


def _final_entries(split: Split) -> dict[int, list[str]]:
    """The submissions of the split's ranked entries (baselines apart), each with the settings
    whose board ranks it."""
    settings: dict[int, list[str]] = defaultdict(list)
    for setting in split.task.run_settings():
        ranked = board_store.stored(split, setting)
        runs = [run for run, rank in zip(ranked.runs, ranked.ranks, strict=True) if rank]
        found = EvaluationRun.objects.filter(pk__in=runs, submission__is_baseline=False)
        for submission_id in found.values_list("submission_id", flat=True):
            settings[submission_id].append(setting)
    return dict(settings)


def repeat_final_entries(split: Split, by: User, why: str) -> tuple[int, list[str]]:
    """Runs 1 to k - 1 of every ranked entry of ``split``'s boards, queued on commit and logged
    per submission: how many submissions got runs, and those that needed none (or whose
    submission cannot run: failed, cancelled), one line each. Refused
    (``RunActionRefused``) when the task asks one run per entry, the split is superseded, it
    has no ranked entry, or no reason is given."""
    task = split.task
    k = task.final_repeats
    if k < 2:
        raise RunActionRefused(
            f"task {task.task_id} asks for one run of each final entry (final_repeats is 1): "
            "raise final_repeats in challenge.yaml or the admin first"
        )
    if split.superseded_at is not None:
        raise RunActionRefused(f"{split} is superseded: repeat the entries of its current version")
    wanted = _final_entries(split)
    if not wanted:
        raise RunActionRefused(f"{split} has no ranked entry to repeat")

    def act(submission: Submission) -> str:
        added = [r for s in wanted[submission.pk] for r in add_repeats(submission, split, s, k)]
        return "" if added else f"it has its {k} runs on {split} already, or cannot run"

    chosen = Submission.objects.filter(pk__in=wanted).order_by("pk")
    refused = act_on_submissions(SubmissionAction.Kind.REPEAT, chosen, by, why, act)
    return len(wanted) - len(refused), refused
