# The overall ranking across a challenge's tasks, as its bundle declares it (leaderboard.overall).

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [  # noqa: RUF012 (generated)
        ("leaderboard", "0044_mail"),
    ]

    operations = [  # noqa: RUF012 (generated)
        migrations.AddField(
            model_name="challenge",
            name="overall",
            field=models.JSONField(
                blank=True,
                default=dict,
                help_text="The overall ranking across the challenge's tasks, as challenge.yaml's "
                "overall section declares it (leaderboard.overall); empty: none. "
                "Set by the bundle.",
            ),
        ),
    ]
