# Issue 37: repeated runs of final entries (Task.final_repeats, EvaluationRun.trial), the public
# board's freeze and Ladder (Challenge.freeze_days, ladder_threshold), and what a ranked board
# keeps of both (RankedBoard.released, repeated). help_text is the models'.

import django.core.validators
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [  # noqa: RUF012 (generated)
        ("leaderboard", "0048_agent_runtime"),
    ]

    operations = [  # noqa: RUF012 (generated)
        migrations.RemoveConstraint(
            model_name="evaluationrun",
            name="run_unique_submission_split_setting",
        ),
        migrations.AddField(
            model_name="challenge",
            name="freeze_days",
            field=models.PositiveSmallIntegerField(
                blank=True,
                help_text=(
                    "The public-test boards freeze for the last N days of each phase: they "
                    "show what was submitted before, and teams see no public-test score of "
                    "a submission made since, until the phase ends. Empty: never frozen."
                ),
                null=True,
            ),
        ),
        migrations.AddField(
            model_name="challenge",
            name="ladder_threshold",
            field=models.FloatField(
                blank=True,
                help_text=(
                    "The Ladder (Blum and Hardt, 2015) on public tests: a team's "
                    "public-test score is published only when it beats the team's best "
                    "published score by more than this many points of the primary metric, "
                    "rounded to it; else the best stays. Empty: every score is published."
                ),
                null=True,
            ),
        ),
        migrations.AddField(
            model_name="evaluationrun",
            name="trial",
            field=models.PositiveSmallIntegerField(default=0),
        ),
        migrations.AddField(
            model_name="rankedboard",
            name="released",
            field=models.JSONField(default=list),
        ),
        migrations.AddField(
            model_name="rankedboard",
            name="repeated",
            field=models.JSONField(default=list),
        ),
        migrations.AddField(
            model_name="task",
            name="final_repeats",
            field=models.PositiveSmallIntegerField(
                default=1,
                help_text=(
                    "k: how many runs of each final entry an organiser's \"repeat the final "
                    'entries" makes on a split (its own and k - 1 more); the board then '
                    "shows their mean, an interval with the variance between runs, and "
                    "pass^k (leaderboard.repeats)."
                ),
                validators=[django.core.validators.MinValueValidator(1)],
            ),
        ),
        migrations.AddConstraint(
            model_name="evaluationrun",
            constraint=models.UniqueConstraint(
                fields=("submission", "task", "split", "setting", "trial"),
                name="run_unique_submission_split_setting_trial",
            ),
        ),
    ]
