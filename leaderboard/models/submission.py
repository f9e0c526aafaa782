"""A team's submission (an agent image) and its evaluation runs, one per (task, split)."""

from __future__ import annotations

from typing import ClassVar

from django.conf import settings
from django.db import models
from django.dispatch import Signal
from django.utils import timezone

from leaderboard.models.challenge import Challenge, Task
from leaderboard.models.split import Split
from leaderboard.models.team import Team

# Sent by ``EvaluationRun.move_to`` after each change of state, with ``run``, ``previous`` and
# ``state``: what ranks boards again (``leaderboard.board_cache``) listens, models know no board.
run_moved = Signal()


PODIUM_BUILD_REASON = (
    "Podium could not build your agent because of a problem on its side, not in your upload; "
    "the organisers have the details. It does not count against your quota."
)


class Submission(models.Model):
    class ArtifactKind(models.TextChoices):
        IMAGE_ARCHIVE = "image-archive", "image archive (docker save)"
        BUILD_CONTEXT = "build-context", "build context (tar with a Dockerfile)"
        REGISTRY_REF = "registry-ref", "registry reference"

    class State(models.TextChoices):
        """received -> building -> ready, or failed (the team's upload), or podium-failed (its
        build failed on Podium's side for good: a fault, or the retries spent; refunded);
        ``leaderboard.pipeline.build``. An organiser's re-run takes a failed one back to
        received."""

        RECEIVED = "received", "received"
        BUILDING = "building", "building"
        READY = "ready", "image ready"
        FAILED = "failed", "failed"
        PODIUM_FAILED = "podium-failed", "failed on Podium's side (refunded)"
        CANCELLED = "cancelled", "cancelled"

    class Standing(models.TextChoices):
        """On the boards or not, by an organiser's logged action (``leaderboard.standing``)."""

        SHOWN = "shown", "on the boards"
        HIDDEN = "hidden", "hidden from the boards"
        DISQUALIFIED = "disqualified", "disqualified"

    # whose build will not be made (again) unless an organiser re-runs one of its runs
    FAILED_STATES = (State.FAILED, State.PODIUM_FAILED)
    # whose image is not made yet: what a build that failed on Podium's side ends
    UNBUILT_STATES = (State.RECEIVED, State.BUILDING)

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="submissions")
    challenge = models.ForeignKey(Challenge, on_delete=models.CASCADE, related_name="submissions")
    submitted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    artifact_kind = models.CharField(max_length=16, choices=ArtifactKind)
    artifact = models.FileField(upload_to="submissions/%Y/%m/%d/", max_length=500, blank=True)
    artifact_sha256 = models.CharField(max_length=64, blank=True)
    artifact_size = models.BigIntegerField(null=True, blank=True)
    registry_ref = models.CharField(max_length=500, blank=True)
    image_digest = models.CharField(max_length=100, blank=True)
    # the hub models the agent loads ({"hub_id", "revision"}), from its aicrowd.json/podium.json
    declared_models = models.JSONField(default=list, blank=True)
    method_name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    paper_url = models.URLField(blank=True)
    code_url = models.URLField(blank=True)
    chosen_for_final = models.BooleanField(default=False)
    is_baseline = models.BooleanField(default=False, help_text="set by organisers only")
    state = models.CharField(max_length=16, choices=State, default=State.RECEIVED)
    standing = models.CharField(max_length=16, choices=Standing, default=Standing.SHOWN)
    failure_reason = models.TextField(blank=True, help_text="shown to the team")
    build_log = models.TextField(
        blank=True, help_text="the last lines of the team's own build, and Podium's notices on it"
    )
    consumes_quota = models.BooleanField(
        default=True, help_text="cleared (refund) when Podium, not the team, caused a failure"
    )
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        ordering = ("-created_at",)
        indexes = (
            models.Index(fields=["team", "challenge", "created_at"]),
            # the runs of an image (leaderboard.image_retention)
            models.Index(fields=["image_digest"], name="submission_image_digest"),
        )

    def __str__(self) -> str:
        return f"#{self.pk} {self.method_name} ({self.team})"

    @classmethod
    def build_failed_for_podium(cls, pk: int) -> bool:
        """The submission ``pk``, its image not made, ends ``podium-failed``: its build failed
        on Podium's side for good. The team reads so (``PODIUM_BUILD_REASON``), its quota
        refunded; False when its image was made (or it ended) meanwhile."""
        unbuilt = cls.objects.filter(pk=pk, state__in=cls.UNBUILT_STATES)
        return (
            unbuilt.update(
                state=cls.State.PODIUM_FAILED,
                failure_reason=PODIUM_BUILD_REASON,
                consumes_quota=False,
            )
            == 1
        )


class SubmissionTask(models.Model):
    """A task a submission is evaluated on (the team's choice), and which of its splits:
    ``split_kinds`` lists the kinds chosen; empty means every split of the task, including
    those imported later."""

    submission = models.ForeignKey(
        Submission, on_delete=models.CASCADE, related_name="chosen_tasks"
    )
    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="+")
    split_kinds = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ("task__order", "task__task_id")
        constraints = (
            models.UniqueConstraint(fields=["submission", "task"], name="chosen_task_unique"),
        )

    def __str__(self) -> str:
        return f"{self.task.task_id} ({', '.join(self.split_kinds) or 'every split'})"

    def takes(self, split: Split) -> bool:
        """Whether ``split`` (of this task) is one the team chose."""
        return split.task_id == self.task_id and (
            not self.split_kinds or split.kind in self.split_kinds
        )


class InvalidTransition(Exception):
    """A run was asked to move to a state its current state does not lead to."""


class EvaluationRun(models.Model):
    """One submission evaluated on one (task, split, setting): ``setting`` is one of the task
    benchmark's ``run_settings`` ("" for a benchmark without settings, as CRAG-MM). Its state
    only moves through ``move_to``."""

    class State(models.TextChoices):
        QUEUED = "queued", "queued"
        BUILDING = "building", "building"
        RUNNING = "running", "running"
        JUDGING = "judging", "judging"
        SCORING = "scoring", "scoring"
        DONE = "done", "done"
        FAILED = "failed", "failed"
        CANCELLED = "cancelled", "cancelled"

    class FailureKind(models.TextChoices):
        """Whose fault a failed run is (``workers/faults.py``), for operators and ``/metrics``."""

        TEAM = "team", "the team's"
        PODIUM = "podium", "Podium's"
        LOST_WORKER = "lost_worker", "worker lost too often"

    ACTIVE_STATES = (State.BUILDING, State.RUNNING, State.JUDGING, State.SCORING)
    TERMINAL_STATES = (State.DONE, State.FAILED, State.CANCELLED)
    # queued -> building -> running -> judging -> scoring -> done; any unfinished run can fail or
    # be cancelled; an active run is re-queued when its worker is lost, and a re-queued run goes
    # straight back to the stage it was in (answers and verdicts already stored are kept).
    # Organisers (``leaderboard.run_actions``) re-run a finished run (back to queued, from
    # nothing) and re-judge a done one (back to judging).
    TRANSITIONS: ClassVar[dict[str, frozenset[str]]] = {
        State.QUEUED: frozenset(
            {*ACTIVE_STATES, State.FAILED, State.CANCELLED},
        ),
        State.BUILDING: frozenset({State.RUNNING, State.QUEUED, State.FAILED, State.CANCELLED}),
        State.RUNNING: frozenset({State.JUDGING, State.QUEUED, State.FAILED, State.CANCELLED}),
        State.JUDGING: frozenset({State.SCORING, State.QUEUED, State.FAILED, State.CANCELLED}),
        State.SCORING: frozenset({State.DONE, State.QUEUED, State.FAILED, State.CANCELLED}),
        State.DONE: frozenset({State.SCORING, State.JUDGING, State.QUEUED}),
        State.FAILED: frozenset({State.QUEUED}),
        State.CANCELLED: frozenset({State.QUEUED}),
    }

    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="runs")
    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="runs")
    split = models.ForeignKey(Split, on_delete=models.CASCADE, related_name="runs")
    setting = models.CharField(max_length=32, blank=True, default="")
    state = models.CharField(max_length=16, choices=State, default=State.QUEUED)
    stage = models.CharField(
        max_length=16, choices=State, blank=True, help_text="the last active stage entered"
    )
    failure_reason = models.TextField(blank=True, help_text="participant-safe")
    operator_detail = models.TextField(blank=True, help_text="organisers only")
    failure_kind = models.CharField(
        max_length=16, choices=FailureKind, blank=True, help_text="a failed run's: whose fault"
    )
    retry_reason = models.CharField(
        max_length=300,
        blank=True,
        help_text="operators: the fault its stage waits to retry after (cleared when claimed)",
    )
    agent_log = models.TextField(
        blank=True, default="", help_text="tail of the agent's output; the team off private splits"
    )
    runtime = models.CharField(
        max_length=16,
        blank=True,
        help_text="the OCI runtime its agent ran under (workers.runtimes); blank: not started",
    )
    transcript = models.FileField(
        upload_to="transcripts/",
        max_length=500,
        blank=True,
        help_text="every judge call (evaluator.judges.transcript); the team off private splits",
    )
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    worker_id = models.CharField(max_length=200, blank=True)
    claim_due_at = models.DateTimeField(
        default=timezone.now,
        help_text=(
            "while no worker holds it: when one should have claimed it (queued, handed over, "
            "or given back until a retry); the reaper re-sends its stage task past it"
        ),
    )
    attempt = models.PositiveSmallIntegerField(default=0)
    items_done = models.PositiveIntegerField(default=0)
    items_total = models.PositiveIntegerField(default=0)
    judge_id = models.CharField(max_length=200, blank=True)
    judge_choice = models.JSONField(
        default=dict,
        blank=True,
        help_text="the judge chosen when re-judging ({}: the task's)",
    )
    prompt_version = models.CharField(max_length=64, blank=True)
    scored_with = models.JSONField(
        default=dict, blank=True, help_text="the protocol's options its scores were computed with"
    )
    scores_complete = models.BooleanField(default=False)
    unjudged_items = models.PositiveIntegerField(default=0)
    # 0: the submission's own run, on the boards; 1, 2, ...: a repeat of it asked by an
    # organiser (``Task.final_repeats``), kept off the boards but for its entry's statistics
    trial = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ("-created_at",)
        constraints = (
            models.UniqueConstraint(
                fields=["submission", "task", "split", "setting", "trial"],
                name="run_unique_submission_split_setting_trial",
            ),
        )
        indexes = (
            models.Index(fields=["split", "state"]),
            models.Index(fields=["state", "heartbeat_at"]),
            models.Index(fields=["state", "worker_id", "claim_due_at"]),
        )

    def __str__(self) -> str:
        setting = f" [{self.setting}]" if self.setting else ""
        return f"run #{self.pk}: {self.submission} on {self.split}{setting} ({self.state})"

    @property
    def progress(self) -> float | None:
        return self.items_done / self.items_total if self.items_total else None

    def move_to(
        self,
        state: str,
        *,
        failure_reason: str = "",
        operator_detail: str = "",
        worker_id: str | None = None,
        failure_kind: str = "",
    ) -> None:
        """Move to ``state`` if the current state allows it; the one place states change.

        The update is conditional on the state read earlier, so two workers racing for the
        same run cannot both move it: the loser gets ``InvalidTransition``.
        """
        state = self.State(state)
        if state not in self.TRANSITIONS[self.state]:
            raise InvalidTransition(f"run #{self.pk}: {self.state} -> {state} is not allowed")
        now, previous = timezone.now(), self.state
        changes: dict[str, object] = {"state": state, "retry_reason": ""}
        if state in self.ACTIVE_STATES:
            changes.update(stage=state, heartbeat_at=now)
            if self.started_at is None:
                changes["started_at"] = now
            if worker_id is not None:
                changes["worker_id"] = worker_id
            if worker_id == "":  # handed over: waits in the stage's queue from now
                changes["claim_due_at"] = now
        if state == self.State.QUEUED:
            changes.update(
                attempt=self.attempt + 1, worker_id="", heartbeat_at=None, claim_due_at=now
            )
        if state in self.TERMINAL_STATES:
            changes.update(finished_at=now, heartbeat_at=None)
        if failure_reason:
            changes["failure_reason"] = failure_reason
        if state == self.State.FAILED:
            changes["failure_kind"] = self.FailureKind(failure_kind or self.FailureKind.TEAM)
        if operator_detail:
            changes["operator_detail"] = operator_detail
        updated = EvaluationRun.objects.filter(pk=self.pk, state=self.state).update(**changes)
        if updated != 1:
            raise InvalidTransition(
                f"run #{self.pk}: no longer {self.state} (moved by someone else)"
            )
        for name, value in changes.items():
            setattr(self, name, value)
        run_moved.send(sender=EvaluationRun, run=self, previous=previous, state=state)

    def beat(self, items_done: int | None = None) -> None:
        """A worker's sign of life, optionally with progress; kept apart from state changes."""
        changes: dict[str, object] = {"heartbeat_at": timezone.now()}
        if items_done is not None:
            changes["items_done"] = items_done
        EvaluationRun.objects.filter(pk=self.pk).update(**changes)
        for name, value in changes.items():
            setattr(self, name, value)
