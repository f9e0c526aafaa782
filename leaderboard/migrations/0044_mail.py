# E-mail sent one by one (organisers' messages, a run's end: leaderboard.mailing) and each
# person's choices of what to receive.

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [  # noqa: RUF012 (generated)
        ("leaderboard", "0043_participants_registration_ban"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [  # noqa: RUF012 (generated)
        migrations.CreateModel(
            name="MailPreference",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "run_ended",
                    models.BooleanField(
                        default=True, help_text="e-mail me when my team's runs end"
                    ),
                ),
                (
                    "organisers_messages",
                    models.BooleanField(default=True, help_text="e-mail me organisers' messages"),
                ),
                (
                    "user",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="mail_preference",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
        ),
        migrations.CreateModel(
            name="Mailing",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "kind",
                    models.CharField(
                        choices=[("message", "organisers' message"), ("run-ended", "run ended")],
                        max_length=16,
                    ),
                ),
                ("audience", models.CharField(help_text="to whom, in words", max_length=300)),
                ("run_finished_at", models.DateTimeField(blank=True, null=True)),
                ("subject", models.CharField(max_length=200)),
                ("body", models.TextField(max_length=10000)),
                (
                    "recipients",
                    models.JSONField(default=list, help_text="user ids, in sending order"),
                ),
                (
                    "skipped",
                    models.PositiveIntegerField(default=0, help_text="left out: they opted out"),
                ),
                ("delivered", models.PositiveIntegerField(default=0)),
                (
                    "state",
                    models.CharField(
                        choices=[("queued", "queued"), ("sent", "sent"), ("failed", "failed")],
                        default="queued",
                        max_length=16,
                    ),
                ),
                ("error", models.TextField(blank=True)),
                ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                ("sent_at", models.DateTimeField(blank=True, null=True)),
                (
                    "due_at",
                    models.DateTimeField(
                        default=django.utils.timezone.now, help_text="when a delivery was last sent"
                    ),
                ),
                (
                    "claimed_until",
                    models.DateTimeField(blank=True, help_text="a delivery holds it", null=True),
                ),
                (
                    "challenge",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="mailings",
                        to="leaderboard.challenge",
                    ),
                ),
                (
                    "run",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="mailings",
                        to="leaderboard.evaluationrun",
                    ),
                ),
                (
                    "sent_by",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                (
                    "task",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to="leaderboard.task",
                    ),
                ),
            ],
            options={
                "ordering": ("-created_at", "-pk"),
                "indexes": [
                    models.Index(
                        fields=["challenge", "kind", "created_at"],
                        name="leaderboard_challen_8902ab_idx",
                    )
                ],
                "constraints": [
                    models.UniqueConstraint(
                        condition=models.Q(("run__isnull", False)),
                        fields=("run", "run_finished_at"),
                        name="mailing_once_per_run_end",
                    )
                ],
            },
        ),
    ]
