"""Judge audits: a sample of a split's verdicts labelled by people, to measure the judge.

An audit copies what its labellers read (question, gold answers, the answer as judged, the
image's thumbnail) and the judge's verdict onto its items when it is opened, so it outlives a
re-judge or a re-run of the runs it sampled and stays a calibration set.

Whoever is made a labeller of a challenge's audit is recorded for the challenge
(``ChallengeLabeller``): that record outlives the audit and bars them from taking part in the
challenge (``leaderboard.permissions.labelling_clash``).
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.utils import timezone

from leaderboard.models.challenge import Challenge
from leaderboard.models.results import ItemAnswer
from leaderboard.models.split import Split
from leaderboard.models.submission import EvaluationRun

DEFAULT_SIZE = 200
MAX_SIZE = 5000


class JudgeAudit(models.Model):
    """An organiser's audit of one judge (``judge_id`` and ``prompt_version`` as its verdicts
    record them) on one split: ``size`` verdicts sampled by verdict and by the value of
    ``dimension`` (a slice dimension; blank: by verdict only), each to be labelled by
    ``labels_wanted`` people. ``menu``: the benchmark's verdicts a labeller chooses among."""

    split = models.ForeignKey(Split, on_delete=models.CASCADE, related_name="audits")
    judge_id = models.CharField(max_length=200)
    prompt_version = models.CharField(max_length=64, blank=True)
    dimension = models.CharField(max_length=100, blank=True)
    size = models.PositiveIntegerField(
        default=DEFAULT_SIZE, validators=[MinValueValidator(1), MaxValueValidator(MAX_SIZE)]
    )
    labels_wanted = models.PositiveSmallIntegerField(
        default=1, validators=[MinValueValidator(1), MaxValueValidator(2)]
    )
    menu = ArrayField(models.CharField(max_length=32))
    seed = models.PositiveIntegerField(default=0)
    labellers = models.ManyToManyField(
        settings.AUTH_USER_MODEL,
        blank=True,
        related_name="judge_audits",
        help_text="labellers besides the organisers (in none of its teams)",
    )
    opened_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    opened_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)
    # when finished: the judge's agreement and kappa with the people's labels (figures of
    # ``evaluator.judge_audit.agreement``), what the leaderboard's judge card shows
    summary = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ("-opened_at",)
        indexes = (models.Index(fields=["judge_id", "prompt_version", "-finished_at"]),)

    def __str__(self) -> str:
        return f"audit #{self.pk} of {self.judge_id} on {self.split}"

    @property
    def finished(self) -> bool:
        return self.finished_at is not None


class AuditItem(models.Model):
    """One sampled verdict, as its labellers read it: ``position`` is the labelling order
    (shuffled across strata); ``judge_verdict`` is never shown to them."""

    audit = models.ForeignKey(JudgeAudit, on_delete=models.CASCADE, related_name="items")
    position = models.PositiveIntegerField()
    answer = models.ForeignKey(
        ItemAnswer, null=True, on_delete=models.SET_NULL, related_name="+"
    )  # the answer it came from, while it exists
    run = models.ForeignKey(EvaluationRun, null=True, on_delete=models.SET_NULL, related_name="+")
    item_key = models.CharField(max_length=200)
    slice_value = models.CharField(max_length=200, blank=True)  # of the audit's dimension
    slices = models.JSONField(default=dict)  # every slice value of the item, by dimension
    judge_verdict = models.CharField(max_length=32)
    question = models.TextField(blank=True)
    truth = models.JSONField(default=list)  # the gold answers, one or several
    response = models.TextField(blank=True)  # the answer as the judge read it
    thumbnail = models.CharField(max_length=300, blank=True)

    class Meta:
        ordering = ("audit", "position")
        constraints = (
            models.UniqueConstraint(fields=["audit", "position"], name="audit_item_position"),
        )

    def __str__(self) -> str:
        return f"audit #{self.audit_id} item {self.position}: {self.item_key}"


class AuditLabel(models.Model):
    """A labeller's verdict on one item (blank: skipped, for another labeller), and a note."""

    item = models.ForeignKey(AuditItem, on_delete=models.CASCADE, related_name="labels")
    labeller = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="audit_labels"
    )
    verdict = models.CharField(max_length=32, blank=True)
    note = models.TextField(blank=True, max_length=2000)
    labelled_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ("item", "labelled_at")
        constraints = (
            models.UniqueConstraint(fields=["item", "labeller"], name="audit_label_once"),
        )

    def __str__(self) -> str:
        return f"{self.item}: {self.verdict or 'skipped'} by {self.labeller_id}"


class ChallengeLabeller(models.Model):
    """``user`` was made a labeller of one of ``challenge``'s judge audits: they may have read
    its private split's questions and gold answers, so they take no part in it. Kept as long as
    the challenge (an audit deleted, or its labeller list changed, leaves it): no page removes
    it, and the admin lists it read-only."""

    challenge = models.ForeignKey(Challenge, on_delete=models.CASCADE, related_name="labellers")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="labeller_of"
    )
    invited_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    invited_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ("challenge", "invited_at")
        constraints = (
            models.UniqueConstraint(fields=["challenge", "user"], name="challenge_labeller_once"),
        )

    def __str__(self) -> str:
        return f"{self.user} labels the judge audits of {self.challenge}"
