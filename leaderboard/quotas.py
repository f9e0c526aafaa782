"""Submission quotas per team and task: per day, in total, and concurrent evaluations.

A submission counts against a task's quotas when it has a run on that task: only the tasks its
team chose (``leaderboard.submitting.choice``) are checked and counted.

- per day: submissions in the last 24 hours (a rolling window);
- total: all submissions;
- concurrent: submissions with a run on the task that has not finished (queued included).

A submission that failed because of Podium (``consumes_quota`` cleared: worker lost, judge
down) does not count for the day or the total. Callers hold a lock on the team row
(``select_for_update``) while checking and creating, so two simultaneous submissions cannot
both take the last slot.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import Exists, OuterRef, QuerySet
from django.utils import timezone

from leaderboard.models import EvaluationRun, Submission, Task, Team

WINDOW = timedelta(hours=24)
UNFINISHED = [s for s in EvaluationRun.State if s not in EvaluationRun.TERMINAL_STATES]


class QuotaExceeded(Exception):
    """A team has no submission left on a task; the message says which limit and until when."""


@dataclass(frozen=True)
class QuotaUsage:
    """How much of each quota a team has used on a task (limits: ``None`` is unlimited)."""

    task: Task
    today: int
    total: int
    concurrent: int
    next_daily_slot: datetime | None  # when the per-day quota frees a slot, if it is used up

    @property
    def remaining(self) -> int | None:
        """Submissions the team may still make on the task now (``None``: no limit)."""
        task = self.task
        left = [
            limit - used
            for limit, used in (
                (task.quota_per_day, self.today),
                (task.quota_total, self.total),
                (task.quota_concurrent, self.concurrent),
            )
            if limit is not None
        ]
        return max(0, min(left)) if left else None

    def problem(self) -> str | None:
        """Why one more submission is refused, or None when it is allowed."""
        task, where = self.task, f"on task {self.task.task_id}"
        if task.quota_concurrent is not None and self.concurrent >= task.quota_concurrent:
            return (
                f"{self.concurrent} submission(s) {where} still being evaluated (at most "
                f"{task.quota_concurrent} at a time); submit again when one finishes"
            )
        if task.quota_total is not None and self.total >= task.quota_total:
            return f"all {task.quota_total} submissions allowed {where} are used"
        if task.quota_per_day is not None and self.today >= task.quota_per_day:
            when = (
                f"; the next one is possible from {self.next_daily_slot:%Y-%m-%d %H:%M} UTC"
                if self.next_daily_slot
                else ""
            )
            return (
                f"{self.today} submissions {where} in the last 24 hours (at most "
                f"{task.quota_per_day}){when}"
            )
        return None


def _on_task(team: Team, task: Task) -> QuerySet[Submission]:
    runs_on_task = EvaluationRun.objects.filter(submission=OuterRef("pk"), task=task)
    return Submission.objects.filter(team=team).filter(Exists(runs_on_task))


def usage(team: Team, task: Task, now: datetime | None = None) -> QuotaUsage:
    """The team's current use of ``task``'s quotas (a few small queries)."""
    now = now or timezone.now()
    counted = _on_task(team, task).filter(consumes_quota=True)
    window = counted.filter(created_at__gt=now - WINDOW)
    today = window.count()
    next_daily_slot = None
    if task.quota_per_day is not None and 0 < task.quota_per_day <= today:
        # A slot opens when enough of the window's oldest submissions have left it.
        leaving = today - task.quota_per_day
        oldest = window.order_by("created_at").values_list("created_at", flat=True)[leaving]
        next_daily_slot = oldest + WINDOW
    unfinished = EvaluationRun.objects.filter(
        submission=OuterRef("pk"), task=task, state__in=UNFINISHED
    )
    return QuotaUsage(
        task=task,
        today=today,
        total=counted.count(),
        concurrent=_on_task(team, task).filter(Exists(unfinished)).count(),
        next_daily_slot=next_daily_slot,
    )


def refusal(team: Team, usages: Iterable[QuotaUsage]) -> str | None:
    """Why ``team`` may not submit on these tasks now, naming every one without a slot left."""
    problems = [p for use in usages if (p := use.problem())]
    return f"team {team.name}: " + "; ".join(problems) if problems else None


def check_quotas(team: Team, tasks: Iterable[Task], now: datetime | None = None) -> None:
    """Raise ``QuotaExceeded`` naming every task on which ``team`` has no submission left."""
    if why := refusal(team, (usage(team, task, now) for task in tasks)):
        raise QuotaExceeded(why)
