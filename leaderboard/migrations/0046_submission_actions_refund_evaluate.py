# Organisers give a submission's quota back and evaluate it on the splits added since, from the
# submissions panel, logged (leaderboard.submission_actions).

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [  # noqa: RUF012 (generated)
        ("leaderboard", "0045_challenge_overall"),
    ]

    operations = [  # noqa: RUF012 (generated)
        migrations.AlterField(
            model_name="submissionaction",
            name="kind",
            field=models.CharField(
                choices=[
                    ("disqualify", "disqualify"),
                    ("hide", "hide from the boards"),
                    ("restore", "restore to the boards"),
                    ("refund", "give the quota back"),
                    ("evaluate", "evaluate on the splits added since"),
                ],
                max_length=16,
            ),
        ),
    ]
