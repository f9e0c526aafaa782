"""Submission quotas per team and task: per day, in total, and concurrent evaluations.

A submission counts against a task's quotas when it has a run on that task: only the tasks its
team chose (``leaderboard.submitting.choice``) are checked and counted.

- per day: submissions in the last 24 hours (a rolling window);
- total: all submissions;
- concurrent: submissions with a run on the task that has not finished (queued included);
- the open phase's quotas (``Phase.quota_per_day``, ``Phase.quota_total``), beside the task's:
  the submissions made during the phase, per day (the last 24 hours within the phase) and in
  total; the tighter limit wins, and the refusal names which limit it is (``QuotaUsage.limit``).

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

from leaderboard.models import EvaluationRun, Phase, Submission, Task, Team

WINDOW = timedelta(hours=24)
UNFINISHED = [s for s in EvaluationRun.State if s not in EvaluationRun.TERMINAL_STATES]


class QuotaExceeded(Exception):
    """A team has no submission left on a task; the message says which limit and until when."""


@dataclass(frozen=True)
class QuotaUsage:
    """How much of each quota a team has used on a task (limits: ``None`` is unlimited), and of
    the quotas of the phase open now (``phase``: None when none is open)."""

    task: Task
    today: int
    total: int
    concurrent: int
    next_daily_slot: datetime | None  # when the per-day quota frees a slot, if it is used up
    phase: Phase | None = None
    phase_today: int = 0
    phase_total: int = 0
    phase_next_daily_slot: datetime | None = None

    def _limits(self) -> list[tuple[str, int | None, int]]:
        """(name, limit, used) of every quota, in the order a refusal names them."""
        task, phase = self.task, self.phase
        return [
            ("concurrent", task.quota_concurrent, self.concurrent),
            ("total", task.quota_total, self.total),
            ("phase_total", phase.quota_total if phase else None, self.phase_total),
            ("per_day", task.quota_per_day, self.today),
            ("phase_per_day", phase.quota_per_day if phase else None, self.phase_today),
        ]

    @property
    def remaining(self) -> int | None:
        """Submissions the team may still make on the task now (``None``: no limit)."""
        left = [limit - used for _, limit, used in self._limits() if limit is not None]
        return max(0, min(left)) if left else None

    @property
    def limit(self) -> str | None:
        """The quota that refuses one more submission (``concurrent``, ``total``,
        ``phase_total``, ``per_day``, ``phase_per_day``), or None when it is allowed."""
        spent = (
            name for name, limit, used in self._limits() if limit is not None and used >= limit
        )
        return next(spent, None)

    def problem(self) -> str | None:
        """Why one more submission is refused, or None when it is allowed."""
        task, phase, where = self.task, self.phase, f"on task {self.task.task_id}"
        match self.limit:
            case "concurrent":
                return (
                    f"{self.concurrent} submission(s) {where} still being evaluated (at most "
                    f"{task.quota_concurrent} at a time); submit again when one finishes"
                )
            case "total":
                return f"all {task.quota_total} submissions allowed {where} are used"
            case "phase_total":
                assert phase is not None
                return (
                    f"all {phase.quota_total} submissions allowed {where} in {phase.name} are used"
                )
            case "per_day":
                return (
                    f"{self.today} submissions {where} in the last 24 hours (at most "
                    f"{task.quota_per_day}){_from(self.next_daily_slot)}"
                )
            case "phase_per_day":
                assert phase is not None
                return (
                    f"{self.phase_today} submissions {where} in the last 24 hours of "
                    f"{phase.name} (at most {phase.quota_per_day} a day in this phase)"
                    f"{_from(self.phase_next_daily_slot)}"
                )
        return None


def _from(slot: datetime | None) -> str:
    return f"; the next one is possible from {slot:%Y-%m-%d %H:%M} UTC" if slot else ""


def _on_task(team: Team, task: Task) -> QuerySet[Submission]:
    runs_on_task = EvaluationRun.objects.filter(submission=OuterRef("pk"), task=task)
    return Submission.objects.filter(team=team).filter(Exists(runs_on_task))


def _daily(
    counted: QuerySet[Submission], since: datetime, limit: int | None
) -> tuple[int, datetime | None]:
    """Submissions made after ``since`` (a rolling day's start), and when the first slot opens
    again if ``limit`` is used up."""
    window = counted.filter(created_at__gt=since)
    today = window.count()
    if limit is None or not 0 < limit <= today:
        return today, None
    # A slot opens when enough of the window's oldest submissions have left it.
    oldest = window.order_by("created_at").values_list("created_at", flat=True)[today - limit]
    return today, oldest + WINDOW


def open_phase(task: Task, now: datetime) -> Phase | None:
    """The phase of ``task``'s challenge open at ``now``, if any."""
    phases = Phase.objects.filter(challenge_id=task.challenge_id, starts_at__lte=now)
    return phases.filter(ends_at__gt=now).order_by("starts_at").first()


def usage(team: Team, task: Task, now: datetime | None = None) -> QuotaUsage:
    """The team's current use of ``task``'s quotas and its open phase's (a few small queries)."""
    now = now or timezone.now()
    counted = _on_task(team, task).filter(consumes_quota=True)
    today, next_daily_slot = _daily(counted, now - WINDOW, task.quota_per_day)
    # an organiser's repeats of a final entry (``leaderboard.repeats``) count against no quota
    unfinished = EvaluationRun.objects.filter(
        submission=OuterRef("pk"), task=task, state__in=UNFINISHED, trial=0
    )
    phase = open_phase(task, now)
    phase_today, phase_total, phase_slot = 0, 0, None
    if phase is not None and (phase.quota_per_day is not None or phase.quota_total is not None):
        during = counted.filter(created_at__gte=phase.starts_at, created_at__lt=phase.ends_at)
        since = max(now - WINDOW, phase.starts_at - timedelta(microseconds=1))
        phase_today, phase_slot = _daily(during, since, phase.quota_per_day)
        phase_total = during.count()
    return QuotaUsage(
        task=task,
        today=today,
        total=counted.count(),
        concurrent=_on_task(team, task).filter(Exists(unfinished)).count(),
        next_daily_slot=next_daily_slot,
        phase=phase,
        phase_today=phase_today,
        phase_total=phase_total,
        phase_next_daily_slot=phase_slot,
    )


def refusal(team: Team, usages: Iterable[QuotaUsage]) -> str | None:
    """Why ``team`` may not submit on these tasks now, naming every one without a slot left."""
    problems = [p for use in usages if (p := use.problem())]
    return f"Team {team.name}: " + "; ".join(problems) if problems else None


def check_quotas(team: Team, tasks: Iterable[Task], now: datetime | None = None) -> None:
    """Raise ``QuotaExceeded`` naming every task on which ``team`` has no submission left."""
    if why := refusal(team, (usage(team, task, now) for task in tasks)):
        raise QuotaExceeded(why)
