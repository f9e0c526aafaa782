# Rank intervals, groups, the minimum detectable effect and the scores calibrated by a judge
# audit beside each board's ranks, from the runs' per-unit values and verdict counts
# (leaderboard.board_statistics, leaderboard.calibration); the task's choice of the score that
# ranks.

import django.contrib.postgres.fields
import django.db.models.deletion
from django.db import migrations, models
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps


def forget_boards(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    # stored boards have no rank intervals: each is ranked again by its first read
    apps.get_model("leaderboard", "RankedBoard").objects.all().delete()


class Migration(migrations.Migration):
    dependencies = [  # noqa: RUF012 (generated)
        ("leaderboard", "0046_submission_actions_refund_evaluate"),
    ]

    operations = [  # noqa: RUF012 (generated)
        migrations.CreateModel(
            name="RunUnits",
            fields=[
                (
                    "run",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        primary_key=True,
                        related_name="units",
                        serialize=False,
                        to="leaderboard.evaluationrun",
                    ),
                ),
                ("metric", models.CharField(max_length=64)),
                ("values", models.BinaryField()),
                ("verdicts", models.JSONField(default=dict)),
            ],
        ),
        migrations.AddField(
            model_name="rankedboard",
            name="calibrated",
            field=models.JSONField(default=list),
        ),
        migrations.AddField(
            model_name="rankedboard",
            name="groups",
            field=django.contrib.postgres.fields.ArrayField(
                base_field=models.PositiveIntegerField(null=True), default=list, size=None
            ),
        ),
        migrations.AddField(
            model_name="rankedboard",
            name="rank_high",
            field=django.contrib.postgres.fields.ArrayField(
                base_field=models.PositiveIntegerField(null=True), default=list, size=None
            ),
        ),
        migrations.AddField(
            model_name="rankedboard",
            name="rank_low",
            field=django.contrib.postgres.fields.ArrayField(
                base_field=models.PositiveIntegerField(null=True), default=list, size=None
            ),
        ),
        migrations.AddField(
            model_name="rankedboard",
            name="statistics",
            field=models.JSONField(default=dict),
        ),
        migrations.AddField(
            model_name="task",
            name="ranked_by",
            field=models.CharField(
                choices=[
                    ("judge", "the judge's score"),
                    ("calibrated", "the judge's score calibrated by a finished audit's labels"),
                ],
                default="judge",
                help_text="which score ranks the boards: the judge's, or the judge's calibrated by "
                "the people's labels of the split's latest finished judge audit, where it has one "
                "(docs/board-statistics.md)",
                max_length=16,
            ),
        ),
        migrations.RunPython(forget_boards, migrations.RunPython.noop),
    ]
