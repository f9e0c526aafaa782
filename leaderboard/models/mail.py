"""E-mail Podium sends to people one by one: an organiser's message to a challenge's
participants, and a team's notice that its run ended (``leaderboard.mailing``); and what each
person agreed to receive."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from leaderboard.models.challenge import Challenge, Task
from leaderboard.models.submission import EvaluationRun

SUBJECT_MAX_CHARS = 200
BODY_MAX_CHARS = 10_000


class MailPreference(models.Model):
    """A person's choices; no row means both are on (the default)."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="mail_preference"
    )
    run_ended = models.BooleanField(default=True, help_text="e-mail me when my team's runs end")
    organisers_messages = models.BooleanField(
        default=True, help_text="e-mail me organisers' messages"
    )

    def __str__(self) -> str:
        return f"mail preferences of {self.user}"


class Mailing(models.Model):
    """One subject and body sent to each recipient in an e-mail of their own (never one e-mail
    with everyone in To or CC). ``recipients`` (user ids) is fixed when it is queued, those who
    opted out already left out (``skipped``); ``delivered`` counts how far the list went, so a
    retried delivery resumes where the last one stopped. One delivery at a time holds it
    (``claimed_until``, renewed at each e-mail); one queued and unclaimed long past ``due_at``
    lost its message and is sent again (``mailing.resend_waiting``)."""

    class Kind(models.TextChoices):
        MESSAGE = "message", "organisers' message"
        RUN_ENDED = "run-ended", "run ended"

    class State(models.TextChoices):
        QUEUED = "queued", "queued"
        SENT = "sent", "sent"
        FAILED = "failed", "failed"

    kind = models.CharField(max_length=16, choices=Kind)
    challenge = models.ForeignKey(Challenge, on_delete=models.CASCADE, related_name="mailings")
    sent_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    audience = models.CharField(max_length=300, help_text="to whom, in words")
    task = models.ForeignKey(
        Task, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # a run-ended notice: the run and the end it tells of (one notice per end)
    run = models.ForeignKey(
        EvaluationRun, null=True, blank=True, on_delete=models.CASCADE, related_name="mailings"
    )
    run_finished_at = models.DateTimeField(null=True, blank=True)
    subject = models.CharField(max_length=SUBJECT_MAX_CHARS)
    body = models.TextField(max_length=BODY_MAX_CHARS)
    recipients = models.JSONField(default=list, help_text="user ids, in sending order")
    skipped = models.PositiveIntegerField(default=0, help_text="left out: they opted out")
    delivered = models.PositiveIntegerField(default=0)
    state = models.CharField(max_length=16, choices=State, default=State.QUEUED)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    sent_at = models.DateTimeField(null=True, blank=True)
    due_at = models.DateTimeField(default=timezone.now, help_text="when a delivery was last sent")
    claimed_until = models.DateTimeField(null=True, blank=True, help_text="a delivery holds it")

    class Meta:
        ordering = ("-created_at", "-pk")
        indexes = (models.Index(fields=["challenge", "kind", "created_at"]),)
        constraints = (
            models.UniqueConstraint(
                fields=["run", "run_finished_at"],
                condition=Q(run__isnull=False),
                name="mailing_once_per_run_end",
            ),
        )

    def __str__(self) -> str:
        return f"{self.get_kind_display()} #{self.pk}: {self.subject}"
