from django.db import migrations, models
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps

OLD_COLUMNS = (
    "turns",
    "conversations",
    "truthfulness",
    "truthfulness_ci_low",
    "truthfulness_ci_high",
    "accuracy",
    "missing",
    "hallucination_rate",
    "early_stop_rate",
    "avg_successful_turns",
    "exact_match",
)


def fill(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    """Each stored row's count and primary metric from what it already holds (``metrics`` has
    the whole block); nothing is scored again."""
    SliceScore = apps.get_model("leaderboard", "SliceScore")
    rows = list(SliceScore.objects.select_related("run__task"))
    for row in rows:
        name = row.run.task.primary_metric
        row.count = row.turns
        value = row.metrics.get(name)
        row.primary = value if isinstance(value, int | float) else None
        row.primary_ci_low, row.primary_ci_high = row.metrics.get(f"{name}_ci95") or (None, None)
    SliceScore.objects.bulk_update(
        rows, ["count", "primary", "primary_ci_low", "primary_ci_high"], batch_size=1000
    )
    SliceScore.objects.filter(dimension="ego", value="ego").delete()  # the is_ego slice has it


class Migration(migrations.Migration):
    """Scores stored as their protocol gives them (``Protocol.score_blocks``): a count, every
    metric in ``metrics``, and the task's primary metric in columns for ranking; CRAG-MM's
    metric columns go (their values stay in ``metrics``)."""

    dependencies = [  # noqa: RUF012 (generated)
        ("leaderboard", "0006_verdict_detail"),
    ]

    operations = [  # noqa: RUF012 (generated)
        migrations.RemoveIndex(model_name="slicescore", name="slice_score_ranking"),
        migrations.AddField(
            model_name="slicescore",
            name="count",
            field=models.PositiveIntegerField(default=0),
            preserve_default=False,
        ),
        migrations.AddField(
            model_name="slicescore", name="primary", field=models.FloatField(null=True)
        ),
        migrations.AddField(
            model_name="slicescore", name="primary_ci_low", field=models.FloatField(null=True)
        ),
        migrations.AddField(
            model_name="slicescore", name="primary_ci_high", field=models.FloatField(null=True)
        ),
        migrations.RunPython(fill, migrations.RunPython.noop),
        *(migrations.RemoveField(model_name="slicescore", name=name) for name in OLD_COLUMNS),
        migrations.AlterField(
            model_name="task",
            name="primary_metric",
            field=models.CharField(default="truthfulness", max_length=64),
        ),
        migrations.AddIndex(
            model_name="slicescore",
            index=models.Index(
                fields=["dimension", "value", "-primary"], name="slice_score_ranking"
            ),
        ),
    ]
