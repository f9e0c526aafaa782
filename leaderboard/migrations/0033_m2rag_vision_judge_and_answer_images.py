# M2RAG: the judge endpoint of a task's prompts carrying images, a name in
# PODIUM_JUDGE_ENDPOINTS, in place of the vision_base_url / vision_model settings; and the
# images an answer places, scaled, for the run page (a cached verdict of any length: 0032).

from django.db import migrations, models
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps

OLD_SETTINGS = ("vision_base_url", "vision_model")


def drop_vision_settings(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    """M2RAG tasks' old vision settings go (the schema refuses them now); such a task names its
    vision endpoint again before it is published (the checklist says so)."""
    Task = apps.get_model("leaderboard", "Task")
    for task in Task.objects.filter(protocol="m2rag"):
        if any(name in (task.settings or {}) for name in OLD_SETTINGS):
            task.settings = {k: v for k, v in task.settings.items() if k not in OLD_SETTINGS}
            task.save(update_fields=["settings"])


class Migration(migrations.Migration):
    dependencies = [("leaderboard", "0032_judgmentrecord_verdict_text")]  # noqa: RUF012 (generated)

    operations = [  # noqa: RUF012 (generated)
        migrations.AddField(
            model_name="task",
            name="vision_judge_endpoint",
            field=models.CharField(
                blank=True,
                help_text="a name in PODIUM_JUDGE_ENDPOINTS whose model sees images: judges the "
                "prompts that carry images (M2RAG); blank: none",
                max_length=64,
            ),
        ),
        migrations.RunPython(drop_vision_settings, migrations.RunPython.noop),
        migrations.AddField(
            model_name="itemanswer",
            name="images",
            field=models.JSONField(
                blank=True,
                default=dict,
                help_text="the images the answer places in its text, by index: their scaled "
                "copies in storage (M2RAG; leaderboard.pipeline.thumbnails)",
            ),
        ),
    ]
