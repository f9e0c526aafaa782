# API tokens through django-rest-knox (leaderboard.ApiToken: a digest, named, expiring), in place
# of DRF's authtoken, whose table kept every key in clear. Those keys cannot become knox tokens
# (only a digest is kept, and the key is shown once), so they are dropped with their table:
# every client makes a new token (account page or POST /api/token/); docs/server.md says so.

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [  # noqa: RUF012 (generated)
        ("leaderboard", "0037_challenge_labeller"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [  # noqa: RUF012 (generated)
        migrations.CreateModel(
            name="ApiToken",
            fields=[
                ("digest", models.CharField(max_length=128, primary_key=True, serialize=False)),
                ("token_key", models.CharField(db_index=True, max_length=25)),
                ("created", models.DateTimeField(auto_now_add=True)),
                ("expiry", models.DateTimeField(blank=True, null=True)),
                ("name", models.CharField(max_length=100)),
                (
                    "last_used",
                    models.DateTimeField(
                        blank=True,
                        help_text="to the minute: a use within a minute of it is not written",
                        null=True,
                    ),
                ),
                (
                    "user",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="auth_token_set",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "verbose_name": "API token",
                "ordering": ("-created",),
            },
        ),
        migrations.RunSQL(
            [
                "DROP TABLE IF EXISTS authtoken_token",
                "DELETE FROM django_migrations WHERE app = 'authtoken'",
            ],
            reverse_sql=migrations.RunSQL.noop,
        ),
    ]
