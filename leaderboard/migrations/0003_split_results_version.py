import uuid

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [  # noqa: RUF012 (generated)
        ("leaderboard", "0002_task_max_artifact_bytes"),
    ]

    operations = [  # noqa: RUF012 (generated)
        migrations.AddField(
            model_name="split",
            name="results_version",
            field=models.UUIDField(
                default=uuid.uuid4,
                editable=False,
                help_text="changes whenever the split's results change (keys the pages' cache)",
            ),
        ),
    ]
