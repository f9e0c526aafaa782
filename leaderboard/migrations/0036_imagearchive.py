# Agent images' archives in storage: who owes each, whether it is there, who waits for it; the
# retention sweep removes those no run needs any more (leaderboard/image_retention.py).

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("leaderboard", "0035_bundle_logo_phase_quotas")]  # noqa: RUF012 (generated)

    operations = [  # noqa: RUF012 (generated)
        migrations.CreateModel(
            name="ImageArchive",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("image_id", models.CharField(help_text="sha256:...", max_length=100, unique=True)),
                (
                    "state",
                    models.CharField(
                        choices=[
                            ("pending", "owed by its node"),
                            ("stored", "in storage"),
                            ("gone", "not in storage"),
                        ],
                        default="pending",
                        max_length=16,
                    ),
                ),
                (
                    "node",
                    models.CharField(
                        blank=True,
                        help_text="the node whose engine has the image and owes it",
                        max_length=200,
                    ),
                ),
                (
                    "wanted_at",
                    models.DateTimeField(
                        blank=True, help_text="another node waits for it: export it now", null=True
                    ),
                ),
                ("size", models.BigIntegerField(blank=True, null=True)),
                ("stored_at", models.DateTimeField(blank=True, null=True)),
                ("swept_at", models.DateTimeField(blank=True, null=True)),
            ],
            options={
                "indexes": [
                    models.Index(fields=["node", "state"], name="imagearchive_node_state"),
                    models.Index(fields=["state"], name="imagearchive_state"),
                ],
            },
        ),
        migrations.AddIndex(
            model_name="submission",
            index=models.Index(fields=["image_digest"], name="submission_image_digest"),
        ),
    ]
