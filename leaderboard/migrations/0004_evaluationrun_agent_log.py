from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [  # noqa: RUF012 (generated)
        ("leaderboard", "0003_split_results_version"),
    ]

    operations = [  # noqa: RUF012 (generated)
        migrations.AddField(
            model_name="evaluationrun",
            name="agent_log",
            field=models.TextField(
                blank=True,
                default="",
                help_text="tail of the agent's output; the team off private splits",
            ),
        ),
    ]
