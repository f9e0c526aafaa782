# How the paired tests drawing a board's groups are corrected together, per task (issue 37:
# Holm by default, named on the page).

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [  # noqa: RUF012 (generated)
        ("leaderboard", "0053_slice_statistics_due"),
    ]

    operations = [  # noqa: RUF012 (generated)
        migrations.AddField(
            model_name="task",
            name="multiple_comparisons",
            field=models.CharField(
                choices=[
                    ("holm", "Holm's step-down"),
                    ("bonferroni", "Bonferroni"),
                    ("none", "none (each test at the board's level alone)"),
                ],
                default="holm",
                help_text="how the paired tests that draw a board's groups are corrected for "
                "being made together (docs/board-statistics.md)",
                max_length=16,
            ),
        ),
    ]
