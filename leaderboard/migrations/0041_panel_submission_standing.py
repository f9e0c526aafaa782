# A submission's standing on the boards (shown, hidden, disqualified) and the log of the
# organisers' actions that change it (leaderboard.standing).

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [  # noqa: RUF012 (generated)
        ("leaderboard", "0040_submission_podium_failed"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [  # noqa: RUF012 (generated)
        migrations.AddField(
            model_name="submission",
            name="standing",
            field=models.CharField(
                choices=[
                    ("shown", "on the boards"),
                    ("hidden", "hidden from the boards"),
                    ("disqualified", "disqualified"),
                ],
                default="shown",
                max_length=16,
            ),
        ),
        migrations.CreateModel(
            name="SubmissionAction",
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
                        choices=[
                            ("disqualify", "disqualify"),
                            ("hide", "hide from the boards"),
                            ("restore", "restore to the boards"),
                        ],
                        max_length=16,
                    ),
                ),
                ("why", models.TextField()),
                (
                    "from_standing",
                    models.CharField(
                        choices=[
                            ("shown", "on the boards"),
                            ("hidden", "hidden from the boards"),
                            ("disqualified", "disqualified"),
                        ],
                        max_length=16,
                    ),
                ),
                ("at", models.DateTimeField(default=django.utils.timezone.now)),
                (
                    "by",
                    models.ForeignKey(
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                (
                    "submission",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="actions",
                        to="leaderboard.submission",
                    ),
                ),
            ],
            options={
                "ordering": ("-at",),
            },
        ),
    ]
