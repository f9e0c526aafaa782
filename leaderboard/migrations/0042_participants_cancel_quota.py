# A task may give the quota back for a submission its team cancelled (leaderboard.run_actions).

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("leaderboard", "0041_panel_submission_standing")]  # noqa: RUF012 (generated)

    operations = [  # noqa: RUF012 (generated)
        migrations.AddField(
            model_name="task",
            name="quota_back_on_cancel",
            field=models.BooleanField(
                default=False,
                help_text="a submission whose runs its team cancelled counts against no quota "
                "(off: it counts, as a failure of the team's own does)",
            ),
        ),
    ]
