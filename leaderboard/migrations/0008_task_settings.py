from django.db import migrations, models
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps


def to_settings(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    """A CRAG-MM task's counting and missing rule become its protocol settings."""
    Task = apps.get_model("leaderboard", "Task")
    for task in Task.objects.all():
        if task.protocol == "crag-mm":
            task.settings = {"counting": task.counting, "missing_variant": task.missing_variant}
            task.save(update_fields=["settings"])


def from_settings(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    Task = apps.get_model("leaderboard", "Task")
    for task in Task.objects.all():
        task.counting = task.settings.get("counting", "paper")
        task.missing_variant = task.settings.get("missing_variant", "kit-b")
        task.save(update_fields=["counting", "missing_variant"])


class Migration(migrations.Migration):
    """A task's protocol settings in one JSON field, checked by the protocol's schema."""

    dependencies = [  # noqa: RUF012 (generated)
        ("leaderboard", "0007_generic_scores"),
    ]

    operations = [  # noqa: RUF012 (generated)
        migrations.AddField(
            model_name="task",
            name="settings",
            field=models.JSONField(blank=True, default=dict),
        ),
        migrations.RunPython(to_settings, from_settings),
        migrations.RemoveField(model_name="task", name="counting"),
        migrations.RemoveField(model_name="task", name="missing_variant"),
    ]
