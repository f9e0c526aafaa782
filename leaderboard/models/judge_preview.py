"""A judge change previewed on one split before it changes ranks (``leaderboard.judge_preview``):
the candidate judge's dry run over the split's done runs, each run's scores under it, the
verdicts that flipped, and the publication that made it the task's judge (who, when, from what
to what)."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from leaderboard.models.results import ItemAnswer
from leaderboard.models.split import Split
from leaderboard.models.submission import EvaluationRun


class JudgePreview(models.Model):
    class State(models.TextChoices):
        QUEUED = "queued", "queued"
        JUDGING = "judging", "judging"
        DONE = "done", "done"
        FAILED = "failed", "failed"

    split = models.ForeignKey(Split, on_delete=models.CASCADE, related_name="judge_previews")
    # the candidate as ``leaderboard.judge_choice.JudgeSpec.to_dict`` gives it, and its label
    candidate = models.JSONField()
    candidate_label = models.CharField(max_length=300)
    # what the candidate is compared with: {} for the split's published verdicts, else another
    # judge (``JudgeSpec.to_dict``) grading the same turns: two judges compared, not a change
    baseline = models.JSONField(default=dict, blank=True)
    # the baseline's label: the judges of the published verdicts when the preview started (the
    # runs' judge ids), or the other judge's
    current_label = models.CharField(max_length=300)
    # the candidate's id and prompt version as the dry run built it (a new prompt version
    # arrives with Podium's code: the same model under a new prompt is a new judge)
    candidate_judge_id = models.CharField(max_length=200, blank=True)
    candidate_prompt_version = models.CharField(max_length=64, blank=True)
    state = models.CharField(max_length=16, choices=State, default=State.QUEUED)
    runs_total = models.PositiveIntegerField(default=0)
    runs_done = models.PositiveIntegerField(default=0)
    judge_calls = models.PositiveIntegerField(default=0, help_text="verdicts the cache lacked")
    error = models.TextField(blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)
    # the publication: the candidate made the task's judge, its done runs re-judged
    published_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    published_at = models.DateTimeField(null=True, blank=True)
    published_from = models.CharField(max_length=300, blank=True)
    published_why = models.TextField(blank=True)
    # both boards of each setting as they stood when it was published (``judge_compare``):
    # the runs are judged again afterwards, and the old board stays readable
    published_boards = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ("-created_at",)

    def __str__(self) -> str:
        return f"preview #{self.pk}: {self.candidate_label} on {self.split}"


class PreviewRun(models.Model):
    """One done run under both judges: its scores as published (``old_*``: kept, so the old
    judge's board stays retrievable after a publication) and under the candidate, and per slice
    how the two judges' verdicts pair up (``pairs``: dimension -> value -> "old|new" -> count).
    Written once per run, whole: the dry run's checkpoint."""

    preview = models.ForeignKey(JudgePreview, on_delete=models.CASCADE, related_name="runs")
    run = models.ForeignKey(EvaluationRun, on_delete=models.CASCADE, related_name="+")
    setting = models.CharField(max_length=32, blank=True)
    old_judge_id = models.CharField(max_length=200)
    old_metrics = models.JSONField(default=dict)
    new_metrics = models.JSONField(default=dict)
    items = models.PositiveIntegerField()
    flipped = models.PositiveIntegerField()
    pairs = models.JSONField(default=dict)

    class Meta:
        constraints = (models.UniqueConstraint(fields=["preview", "run"], name="preview_run_once"),)


class PreviewFlip(models.Model):
    """A verdict the candidate decides differently, with both judges' words."""

    preview = models.ForeignKey(JudgePreview, on_delete=models.CASCADE, related_name="flips")
    answer = models.ForeignKey(ItemAnswer, on_delete=models.CASCADE, related_name="+")
    old_verdict = models.CharField(max_length=32)
    new_verdict = models.CharField(max_length=32)
    new_detail = models.JSONField(default=dict, help_text="the candidate's per-item row")

    class Meta:
        ordering = ("answer_id",)
        constraints = (
            models.UniqueConstraint(fields=["preview", "answer"], name="preview_flip_once"),
        )
