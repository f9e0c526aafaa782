# The rest of a challenge bundle (issue 20): a challenge's logo, its phases' quotas, the team of
# its declared baselines, the organisers' starter-kit files, and its search corpus as a row
# (written in the import's transaction) instead of a sha256 file beside the tar.

import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps


def corpora_as_rows(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    """A corpus stored before as corpora/<slug>.tar with corpora/<slug>.sha256 becomes a row
    naming that tar (a corpus stored later is named by its sha256)."""
    from django.core.files.storage import default_storage

    Challenge = apps.get_model("leaderboard", "Challenge")
    SearchCorpus = apps.get_model("leaderboard", "SearchCorpus")
    for challenge in Challenge.objects.all():
        tar, sidecar = f"corpora/{challenge.slug}.tar", f"corpora/{challenge.slug}.sha256"
        if not (default_storage.exists(sidecar) and default_storage.exists(tar)):
            continue
        with default_storage.open(sidecar, "rb") as handle:
            sha256 = handle.read().decode("ascii").strip()
        SearchCorpus.objects.create(challenge=challenge, bundle=tar, sha256=sha256)


class Migration(migrations.Migration):
    dependencies = [("leaderboard", "0034_split_versions")]  # noqa: RUF012 (generated)

    operations = [  # noqa: RUF012 (generated)
        migrations.AddField(
            model_name="challenge",
            name="logo",
            field=models.FileField(
                blank=True,
                help_text="A raster image (PNG, JPEG or WebP) shown on the challenge's page and "
                "in the list of challenges; set from a bundle's challenge.logo "
                "(leaderboard.challenge_bundle).",
                max_length=500,
                upload_to="logos/",
            ),
        ),
        migrations.AddField(
            model_name="challenge",
            name="logo_sha256",
            field=models.CharField(blank=True, editable=False, max_length=64),
        ),
        migrations.AddField(
            model_name="phase",
            name="quota_per_day",
            field=models.PositiveIntegerField(
                blank=True,
                help_text="Submissions per team and task in 24 hours during this phase; empty: "
                "the task's own quota alone",
                null=True,
            ),
        ),
        migrations.AddField(
            model_name="phase",
            name="quota_total",
            field=models.PositiveIntegerField(
                blank=True,
                help_text="Submissions per team and task during this phase; empty: the task's "
                "own quota alone",
                null=True,
            ),
        ),
        migrations.AddField(
            model_name="team",
            name="baselines_of",
            field=models.OneToOneField(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="baseline_team",
                to="leaderboard.challenge",
            ),
        ),
        migrations.CreateModel(
            name="SearchCorpus",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("bundle", models.FileField(max_length=500, upload_to="corpora/")),
                ("sha256", models.CharField(max_length=64)),
                ("stored_at", models.DateTimeField(default=django.utils.timezone.now)),
                (
                    "challenge",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="stored_corpus",
                        to="leaderboard.challenge",
                    ),
                ),
            ],
            options={"verbose_name_plural": "search corpora"},
        ),
        migrations.CreateModel(
            name="KitFile",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "path",
                    models.CharField(
                        help_text="its path in the bundle and in files/", max_length=500
                    ),
                ),
                ("file", models.FileField(max_length=500, upload_to="kit-files/")),
                ("sha256", models.CharField(max_length=64)),
                ("size", models.BigIntegerField()),
                (
                    "challenge",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="kit_files",
                        to="leaderboard.challenge",
                    ),
                ),
            ],
            options={
                "ordering": ("challenge", "path"),
                "constraints": [
                    models.UniqueConstraint(
                        fields=("challenge", "path"), name="kit_file_unique_path"
                    )
                ],
            },
        ),
        migrations.RunPython(corpora_as_rows, migrations.RunPython.noop),
    ]
