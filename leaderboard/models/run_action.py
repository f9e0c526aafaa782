"""What organisers did to runs (re-run, re-judge, cancel, re-queue) and to submissions
(disqualify, hide from the boards, restore): who, when, why, from which state."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from leaderboard.models.submission import EvaluationRun, Submission


class RunAction(models.Model):
    class Kind(models.TextChoices):
        RERUN = "rerun", "re-run"
        REJUDGE = "rejudge", "re-judge"
        CANCEL = "cancel", "cancel"
        REQUEUE = "requeue", "re-queue"

    run = models.ForeignKey(EvaluationRun, on_delete=models.CASCADE, related_name="actions")
    kind = models.CharField(max_length=16, choices=Kind)
    by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    why = models.TextField()
    detail = models.CharField(max_length=300, blank=True, help_text="e.g. the judge chosen")
    from_state = models.CharField(max_length=16, choices=EvaluationRun.State)
    at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ("-at",)

    def __str__(self) -> str:
        when = f"{self.at:%Y-%m-%d %H:%M}"
        return f"{self.get_kind_display()} of run #{self.run_id} by {self.by} ({when})"


class SubmissionAction(models.Model):
    """An organiser's action on a submission (``leaderboard.submission_actions``): its standing
    on the boards, its quota, its runs on new splits; its team reads ``why``."""

    class Kind(models.TextChoices):
        DISQUALIFY = "disqualify", "disqualify"
        HIDE = "hide", "hide from the boards"
        RESTORE = "restore", "restore to the boards"
        REFUND = "refund", "give the quota back"
        EVALUATE = "evaluate", "evaluate on the splits added since"
        REPEAT = "repeat", "repeat a final entry's run"

    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="actions")
    kind = models.CharField(max_length=16, choices=Kind)
    by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    why = models.TextField()
    from_standing = models.CharField(max_length=16, choices=Submission.Standing)
    at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ("-at",)

    def __str__(self) -> str:
        when = f"{self.at:%Y-%m-%d %H:%M}"
        return (
            f"{self.get_kind_display()} of submission #{self.submission_id} by {self.by} ({when})"
        )
