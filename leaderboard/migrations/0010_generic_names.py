"""Answer, verdict, run and split fields named for any protocol, not after CRAG-MM's turns."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [  # noqa: RUF012 (generated)
        ("leaderboard", "0009_run_settings"),
    ]

    operations = [  # noqa: RUF012 (generated)
        migrations.RemoveConstraint(model_name="turnanswer", name="answer_once_per_turn"),
        migrations.RenameModel(old_name="TurnAnswer", new_name="ItemAnswer"),
        migrations.RenameModel(old_name="TurnVerdict", new_name="ItemVerdict"),
        migrations.RenameField(model_name="itemanswer", old_name="session_id", new_name="group"),
        migrations.RenameField(
            model_name="itemanswer", old_name="interaction_id", new_name="item_key"
        ),
        migrations.RenameField(model_name="itemanswer", old_name="turn_idx", new_name="position"),
        migrations.AlterField(
            model_name="itemanswer", name="position", field=models.PositiveIntegerField()
        ),
        migrations.AlterModelOptions(
            name="itemanswer", options={"ordering": ("run", "group", "position")}
        ),
        migrations.AddConstraint(
            model_name="itemanswer",
            constraint=models.UniqueConstraint(
                fields=("run", "item_key"), name="answer_once_per_item"
            ),
        ),
        migrations.RenameField(
            model_name="evaluationrun", old_name="turns_done", new_name="items_done"
        ),
        migrations.RenameField(
            model_name="evaluationrun", old_name="turns_total", new_name="items_total"
        ),
        migrations.RenameField(
            model_name="evaluationrun", old_name="unjudged_turns", new_name="unjudged_items"
        ),
        migrations.RemoveField(model_name="evaluationrun", name="counting"),
        migrations.AddField(
            model_name="evaluationrun",
            name="scored_with",
            field=models.JSONField(
                blank=True,
                default=dict,
                help_text="the protocol's options its scores were computed with",
            ),
        ),
        migrations.RenameField(model_name="split", old_name="conversations", new_name="groups"),
        migrations.RenameField(model_name="split", old_name="turns", new_name="items"),
        migrations.RenameField(model_name="task", old_name="per_turn_s", new_name="per_item_s"),
    ]
