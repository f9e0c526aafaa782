"""Organisers' actions on runs: re-run, re-judge, cancel. Each is logged (``RunAction``: who,
why, from which state) and refused, with the reason, where the run's state does not allow it.

- Re-run: a finished run (done, failed or cancelled) starts again from nothing: its answers,
  verdicts, scores and comparisons go, the submission's image is built again if it never was.
- Re-judge: a done run's verdicts go and it goes back to judging (then scoring) with the task's
  judge as configured now, or with a judge the organiser chose among those on offer
  (``leaderboard.judge_choice``), kept on the run for its later judging passes and named in
  the action's detail; its answers stay. The judgment cache answers what that judge has
  already judged.
- Cancel: an unfinished run stops; a worker on it notices at its next heartbeat or batch. The
  team reads the organiser's reason as the run's failure reason (the organiser's name goes to
  the operator detail only).
- A team's own cancel (``cancel_own``): a member stops the team's unfinished run, logged as a
  cancel with a fixed reason. Where the task gives the quota back
  (``Task.quota_back_on_cancel``, off by default: a cancelled run counts as a failure of the
  team's own does) and every run of the submission is cancelled, the submission counts against
  no quota.
- Re-queue: an unfinished run (stuck, retrying, or its message lost) goes back to its stage's
  queue, as the reaper sends it (``leaderboard.tasks.requeue``); a worker on it stops at its next
  heartbeat. What is stored (answers, verdicts) stays.

Every reason (``why``) is the team's to read (``leaderboard.standing.seen_by_team``); what only
organisers and operators read (the worker, the judge's endpoint) goes to the ``detail``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable

from django.db import transaction
from django.db.models import Q

from leaderboard.duplicates import forget as forget_similarities
from leaderboard.judge_choice import JudgeSpec
from leaderboard.models import (
    EntryComparison,
    EvaluationRun,
    ItemVerdict,
    RunAction,
    Submission,
)
from leaderboard.permissions import User
from leaderboard.scores import drop_scores
from leaderboard.tasks import dispatch_stage
from leaderboard.tasks import requeue as requeue_run

State = EvaluationRun.State
Kind = RunAction.Kind
CANCELLED_REASON = "An organiser cancelled this run: {why}"
TEAM_CANCELLED_REASON = "Your team cancelled this run."
TEAM_CANCEL_WHY = "its team cancelled it"  # the logged reason of a team's own cancel


class RunActionRefused(Exception):
    """The run's state does not allow the action; the message says why."""


def _act(
    kind: str,
    runs: Iterable[EvaluationRun],
    by: User,
    why: str,
    act: Callable[[EvaluationRun, User, str], None],
    detail: str = "",
) -> list[str]:
    """``act`` on each run under a row lock, logged (with ``detail``); the refusals, one line
    each."""
    why = why.strip()
    if not why:
        raise RunActionRefused("say why: the reason is kept with the action")
    refused = []
    for run_id in [r.pk for r in runs]:
        with transaction.atomic():
            run = EvaluationRun.objects.select_for_update().select_related("task").get(pk=run_id)
            previous = run.state
            try:
                act(run, by, why)
            except RunActionRefused as exc:
                refused.append(f"run #{run.pk}: {exc}")
                continue
            RunAction.objects.create(
                run=run, kind=kind, by=by if by.is_authenticated else None, why=why,
                from_state=previous, detail=detail,
            )  # fmt: skip
    return refused


def rerun(runs: Iterable[EvaluationRun], by: User, why: str) -> list[str]:
    return _act(Kind.RERUN, runs, by, why, _rerun)


def rejudge(
    runs: Iterable[EvaluationRun], by: User, why: str, judge: JudgeSpec | None = None
) -> list[str]:
    """``judge``: the judge to grade them with from now on (None: each task's, as configured
    now; ``leaderboard.judge_choice.chosen_judge`` checks it is on offer)."""
    choice = judge.to_dict() if judge else {}
    detail = f"judge: {judge.label}" if judge else "judge: the task's"

    return _act(Kind.REJUDGE, runs, by, why, functools.partial(_rejudge, choice=choice), detail)


def cancel(runs: Iterable[EvaluationRun], by: User, why: str, detail: str = "") -> list[str]:
    """``detail``: what the team does not read (the operator page's: the worker heard last)."""
    return _act(Kind.CANCEL, runs, by, why, _cancel, detail)


def cancel_own(run: EvaluationRun, by: User) -> bool:
    """``by`` (a member: ``permissions.can_cancel_run``) cancels the team's run; raises
    ``RunActionRefused`` when it has ended. True when its submission's quota was given back."""
    own = functools.partial(_cancel, reason=TEAM_CANCELLED_REASON)
    refused = _act(Kind.CANCEL, [run], by, TEAM_CANCEL_WHY, own)
    if refused:
        raise RunActionRefused(refused[0].split(": ", 1)[1])
    runs = EvaluationRun.objects.filter(submission_id=run.submission_id)
    if (
        runs.exclude(state=State.CANCELLED).exists()
        or runs.filter(task__quota_back_on_cancel=False).exists()
    ):
        return False
    Submission.objects.filter(pk=run.submission_id).update(consumes_quota=False)
    return True


def requeue(runs: Iterable[EvaluationRun], by: User, why: str, detail: str = "") -> list[str]:
    return _act(Kind.REQUEUE, runs, by, why, _requeue, detail)


def _rerun(run: EvaluationRun, by: User, why: str) -> None:
    if run.state not in EvaluationRun.TERMINAL_STATES:
        raise RunActionRefused(f"it is {run.state}; cancel it first")
    run.answers.all().delete()  # their verdicts with them
    drop_scores(run)
    EntryComparison.objects.filter(Q(run_a=run) | Q(run_b=run)).delete()
    forget_similarities(run)
    run.move_to(State.QUEUED, operator_detail=f"re-run by {by}: {why}")
    fresh = {
        "stage": "", "attempt": 0, "worker_id": "", "started_at": None, "finished_at": None,
        "failure_reason": "", "failure_kind": "", "items_done": 0, "agent_log": "",
        "transcript": "",
        "judge_id": "", "judge_choice": {}, "prompt_version": "", "scored_with": {},
        "scores_complete": False,
        "unjudged_items": 0,
    }  # fmt: skip
    EvaluationRun.objects.filter(pk=run.pk).update(**fresh)
    for name, value in fresh.items():
        setattr(run, name, value)
    Submission.objects.filter(pk=run.submission_id, state__in=Submission.FAILED_STATES).update(
        state=Submission.State.RECEIVED, failure_reason=""
    )
    dispatch_stage(run, State.BUILDING)


def _rejudge(run: EvaluationRun, by: User, why: str, choice: dict[str, str]) -> None:
    if run.state != State.DONE:
        raise RunActionRefused(f"it is {run.state}; only a done run is re-judged")
    ItemVerdict.objects.filter(answer__run=run).delete()
    forget_similarities(run)
    run.move_to(State.JUDGING, worker_id="", operator_detail=f"re-judged by {by}: {why}")
    EvaluationRun.objects.filter(pk=run.pk).update(
        scores_complete=False, unjudged_items=0, judge_choice=choice
    )
    run.judge_choice = choice
    dispatch_stage(run, State.JUDGING)


def _cancel(run: EvaluationRun, by: User, why: str, reason: str = CANCELLED_REASON) -> None:
    if run.state in EvaluationRun.TERMINAL_STATES:
        raise RunActionRefused(f"it is already {run.state}")
    run.move_to(
        State.CANCELLED,
        failure_reason=reason.format(why=why),
        operator_detail=f"cancelled by {by}: {why}",
    )


def _requeue(run: EvaluationRun, by: User, why: str) -> None:
    if run.state in EvaluationRun.TERMINAL_STATES:
        raise RunActionRefused(f"it is {run.state}; re-run it instead")
    requeue_run(run, f"re-queued by {by}: {why}")
