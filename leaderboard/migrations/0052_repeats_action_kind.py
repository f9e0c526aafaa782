# Organisers repeat the final entries' runs on a split (issue 37, item 4), logged per submission
# (leaderboard.repeats); a choice only, no column changes.

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [  # noqa: RUF012 (generated)
        ("leaderboard", "0051_slicework_ranked_slices"),
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
                    ("repeat", "repeat a final entry's run"),
                ],
                max_length=16,
            ),
        ),
    ]
