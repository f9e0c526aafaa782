# Split versions (issue 20): data changed under a split that has runs becomes a new version of
# its (task, kind); the earlier one is superseded and keeps its runs. Existing splits become
# version 1, current.

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("leaderboard", "0033_m2rag_vision_judge_and_answer_images")]  # noqa: RUF012

    operations = [  # noqa: RUF012 (generated)
        migrations.AddField(
            model_name="split",
            name="version",
            field=models.PositiveIntegerField(default=1, editable=False),
        ),
        migrations.AddField(
            model_name="split",
            name="superseded_at",
            field=models.DateTimeField(
                blank=True,
                editable=False,
                help_text="when a newer version of this task's split replaced it (empty: current)",
                null=True,
            ),
        ),
        migrations.AlterModelOptions(
            name="split",
            options={"ordering": ("task", "kind", "version")},
        ),
        migrations.RemoveConstraint(
            model_name="split",
            name="split_unique_kind",
        ),
        migrations.AddConstraint(
            model_name="split",
            constraint=models.UniqueConstraint(
                fields=("task", "kind", "version"), name="split_unique_version"
            ),
        ),
        migrations.AddConstraint(
            model_name="split",
            constraint=models.UniqueConstraint(
                condition=models.Q(("superseded_at__isnull", True)),
                fields=("task", "kind"),
                name="split_one_current",
            ),
        ),
    ]
