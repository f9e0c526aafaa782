# Who was made a labeller of a challenge's judge audits, kept as long as the challenge: they take
# no part in it (leaderboard/permissions.py, labelling_clash).

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps


def record_labellers(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    """The labellers the audits list now, each recorded for the audit's challenge."""
    JudgeAudit = apps.get_model("leaderboard", "JudgeAudit")
    ChallengeLabeller = apps.get_model("leaderboard", "ChallengeLabeller")
    listed = JudgeAudit.labellers.through.objects.values_list(
        "judgeaudit__split__task__challenge_id", "user_id", "judgeaudit__opened_by_id"
    ).order_by("judgeaudit__opened_at")
    seen: set[tuple[int, int]] = set()
    records = []
    for challenge_id, user_id, opened_by_id in listed.iterator():
        if (challenge_id, user_id) not in seen:
            seen.add((challenge_id, user_id))
            records.append(
                ChallengeLabeller(
                    challenge_id=challenge_id, user_id=user_id, invited_by_id=opened_by_id
                )
            )
    ChallengeLabeller.objects.bulk_create(records, batch_size=1000)


class Migration(migrations.Migration):
    dependencies = [  # noqa: RUF012 (generated)
        ("leaderboard", "0036_imagearchive"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [  # noqa: RUF012 (generated)
        migrations.CreateModel(
            name="ChallengeLabeller",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("invited_at", models.DateTimeField(default=django.utils.timezone.now)),
                (
                    "challenge",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="labellers",
                        to="leaderboard.challenge",
                    ),
                ),
                (
                    "invited_by",
                    models.ForeignKey(
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                (
                    "user",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="labeller_of",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "ordering": ("challenge", "invited_at"),
                "constraints": [
                    models.UniqueConstraint(
                        fields=("challenge", "user"), name="challenge_labeller_once"
                    )
                ],
            },
        ),
        migrations.RunPython(record_labellers, migrations.RunPython.noop),
    ]
