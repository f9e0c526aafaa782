# A task's benchmark: a name the registry (evaluator.benchmarks) knows, no longer a list kept
# here, so a new benchmark needs no migration; the field is named for what it holds.

from django.db import migrations, models

import evaluator.benchmarks


class Migration(migrations.Migration):
    dependencies = [("leaderboard", "0038_api_tokens")]  # noqa: RUF012 (generated)

    operations = [  # noqa: RUF012 (generated)
        migrations.RenameField(model_name="task", old_name="protocol", new_name="benchmark"),
        migrations.AlterField(
            model_name="task",
            name="benchmark",
            field=models.CharField(
                choices=evaluator.benchmarks.choices, default="crag-mm", max_length=32
            ),
        ),
    ]
