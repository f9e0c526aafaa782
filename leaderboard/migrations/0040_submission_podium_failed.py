# A submission whose build failed on Podium's side for good ends "podium-failed" (refunded),
# instead of staying "received" (leaderboard.pipeline.build).

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("leaderboard", "0039_task_benchmark")]  # noqa: RUF012 (generated)

    operations = [  # noqa: RUF012 (generated)
        migrations.AlterField(
            model_name="submission",
            name="state",
            field=models.CharField(
                choices=[
                    ("received", "received"),
                    ("building", "building"),
                    ("ready", "image ready"),
                    ("failed", "failed"),
                    ("podium-failed", "failed on Podium's side (refunded)"),
                    ("cancelled", "cancelled"),
                ],
                default="received",
                max_length=16,
            ),
        ),
    ]
