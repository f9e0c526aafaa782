import django.core.validators
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [  # noqa: RUF012 (generated)
        ("leaderboard", "0001_initial"),
    ]

    operations = [  # noqa: RUF012 (generated)
        migrations.AddField(
            model_name="task",
            name="max_artifact_bytes",
            field=models.PositiveBigIntegerField(
                default=21474836480,
                help_text="largest image archive or build context a team may upload",
                validators=[django.core.validators.MinValueValidator(1)],
            ),
        ),
    ]
