# A task's agent runtime (runsc / runc, issue #38: workers.runtimes) and the runtime a run's
# agent ran under.

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [  # noqa: RUF012 (generated)
        ("leaderboard", "0047_board_statistics"),
    ]

    operations = [  # noqa: RUF012 (generated)
        migrations.AddField(
            model_name="evaluationrun",
            name="runtime",
            field=models.CharField(
                blank=True,
                help_text=(
                    "the OCI runtime its agent ran under (workers.runtimes); blank: not started"
                ),
                max_length=16,
            ),
        ),
        migrations.AddField(
            model_name="task",
            name="agent_runtime",
            field=models.CharField(
                blank=True,
                choices=[
                    ("runsc", "runsc (gVisor: the agent talks to gVisor's kernel, not the host's)"),
                    ("runc", "runc (the host's kernel, with Podium's hardening)"),
                ],
                help_text="the OCI runtime its agents run under; blank: Podium's default (gVisor "
                "where the node's engine offers it; runc for GPU tasks unless PODIUM_GPU_RUNTIME "
                "says runsc)",
                max_length=16,
            ),
        ),
    ]
