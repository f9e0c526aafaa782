"""The runs ``bench/scale_out.py`` queues and checks (imported once Django is set up: the S3
server it stores to is started first)."""

from __future__ import annotations

import json
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from leaderboard.models import (
    Challenge,
    EvaluationRun,
    ItemAnswer,
    Membership,
    Split,
    Submission,
    Task,
    Team,
)
from leaderboard.splits import import_split_dir
from leaderboard.tasks import dispatch_stage
from tests.cluster.nodes import wait_until
from tests.e2e.harness import make_task, submit_agent, write_split

State = EvaluationRun.State


@dataclass
class Workload:
    team: Team
    task: Task
    split: Split
    submission: Submission  # the built one; every queued run is of a clone of it

    @classmethod
    def create(cls, agent: Path, conversations: int, scratch: Path) -> Workload:
        user = User.objects.create_user(f"bench-{time.time_ns()}", password="bench-pw-123")
        team = Team.objects.create(name=f"Scale {time.time_ns()}")
        Membership.objects.create(team=team, user=user)
        slug = f"scale-{time.time_ns()}"
        challenge = Challenge.objects.create(name=slug, slug=slug, is_published=True)
        task = make_task(challenge, "single-source-augmentation", quota_per_day=None)
        split = import_split_dir(task, "validation", write_split(scratch, conversations, 1))
        submission = submit_agent(team, user, challenge, agent, "counter")
        return cls(team, task, split, submission)

    def warm_up(self, timeout_s: float) -> float:
        """Seconds for one run queued alone (the first one builds the image)."""
        started = time.monotonic()
        runs = list(self.submission.runs.values_list("pk", flat=True))
        if EvaluationRun.objects.filter(pk__in=runs, state=State.DONE).exists():
            runs = self.queue(1)
        wait_until("the warm-up run", lambda: self.finished(runs), timeout_s, 0.2)
        self.submission.refresh_from_db()
        done = EvaluationRun.objects.filter(pk__in=runs, state=State.DONE).count()
        if done != len(runs):
            raise RuntimeError(f"warm-up failed: {EvaluationRun.objects.get(pk=runs[0]).__dict__}")
        return time.monotonic() - started

    def queue(self, count: int) -> list[int]:
        """``count`` runs queued at once, each of its own clone of the built submission."""
        now = timezone.now()
        with transaction.atomic():
            clones = Submission.objects.bulk_create(
                Submission(
                    team=self.team,
                    challenge=self.task.challenge,
                    artifact_kind=self.submission.artifact_kind,
                    artifact=self.submission.artifact.name,
                    image_digest=self.submission.image_digest,
                    state=Submission.State.READY,
                    method_name=f"clone {i}",
                    created_at=now,
                )
                for i in range(count)
            )
            runs = EvaluationRun.objects.bulk_create(
                EvaluationRun(
                    submission=clone,
                    task=self.task,
                    split=self.split,
                    items_total=self.split.items,
                    created_at=now,
                )
                for clone in clones
            )
            for run in runs:
                run.task = self.task
                dispatch_stage(run, State.BUILDING)
        return [run.pk for run in runs]

    @staticmethod
    def finished(runs: list[int]) -> bool:
        active = EvaluationRun.objects.filter(pk__in=runs)
        return not active.exclude(state__in=EvaluationRun.TERMINAL_STATES).exists()

    def check(self, runs: list[int]) -> dict:
        """Throughput and queue wait of ``runs``, and that each turn was answered once, by one
        agent process, on the first attempt."""
        rows = list(EvaluationRun.objects.filter(pk__in=runs))
        queued = min(run.created_at for run in rows)
        last_done = max(run.finished_at or timezone.now() for run in rows)
        waits = [(run.started_at - run.created_at).total_seconds() for run in rows]
        problems = [f"#{r.pk} {r.state} attempt {r.attempt}" for r in rows if r.state != State.DONE]
        problems += [f"#{r.pk} attempt {r.attempt}" for r in rows if r.attempt]
        for run in rows:
            answers = list(ItemAnswer.objects.filter(run=run).values_list("item_key", "response"))
            keys = {key for key, _ in answers}
            asked = sorted(json.loads(response)["asked"] for _, response in answers)
            processes = {json.loads(response)["process"] for _, response in answers}
            if len(answers) != self.split.items or len(keys) != len(answers):
                problems.append(f"#{run.pk}: {len(answers)} answers, {len(keys)} turns")
            if len(processes) != 1 or asked != list(range(1, len(answers) + 1)):
                problems.append(f"#{run.pk}: {len(processes)} agent processes, asked {asked}")
        span = (last_done - queued).total_seconds()
        return {
            "runs": len(rows),
            "done": sum(run.state == State.DONE for run in rows),
            "problems": problems[:10],
            "turns": len(rows) * self.split.items,
            "span_s": round(span, 1),
            "runs_per_min": round(60 * len(rows) / span, 2),
            "queue_wait_p50_s": round(statistics.median(waits), 1),
            "queue_wait_p95_s": round(sorted(waits)[int(0.95 * (len(waits) - 1))], 1),
            "queue_wait_max_s": round(max(waits), 1),
            "first_queued": queued,
            "last_done": last_done,
        }
