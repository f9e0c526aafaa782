# The task storing a split's per-slice statistics, when it is due (issue 37): a message lost on
# the way is sent again by the reaper (leaderboard.slice_store.resend_waiting).

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [  # noqa: RUF012 (generated)
        ("leaderboard", "0052_repeats_action_kind"),
    ]

    operations = [  # noqa: RUF012 (generated)
        migrations.AddField(
            model_name="split",
            name="slice_statistics_due_at",
            field=models.DateTimeField(blank=True, editable=False, null=True),
        ),
    ]
