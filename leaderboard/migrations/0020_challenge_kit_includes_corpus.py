from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [  # noqa: RUF012 (generated)
        ("leaderboard", "0019_run_page_judges_duplicates"),
    ]

    operations = [  # noqa: RUF012 (generated)
        migrations.AddField(
            model_name="challenge",
            name="kit_includes_corpus",
            field=models.BooleanField(
                default=False,
                help_text="The starter kit carries the challenge's search corpus (participants "
                "may then search it offline). Off: the kit has the public splits and no corpus.",
            ),
        ),
    ]
