from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [  # noqa: RUF012 (generated)
        ("leaderboard", "0004_evaluationrun_agent_log"),
    ]

    operations = [  # noqa: RUF012 (generated)
        migrations.AddField(
            model_name="evaluationrun",
            name="transcript",
            field=models.FileField(
                blank=True,
                help_text=(
                    "every judge call (evaluator.judges.transcript); the team off private splits"
                ),
                max_length=500,
                upload_to="transcripts/",
            ),
        ),
    ]
