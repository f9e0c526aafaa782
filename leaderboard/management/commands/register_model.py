"""``manage.py register_model --challenge SLUG HUB_ID DIR [--revision main]``: store a model's
files in this node's model store as the Hugging Face cache holds them, and let the challenge's
submissions declare it (``workers.model_store``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from leaderboard.models import Challenge, HubModel
from workers.model_store import ModelStoreError, register


class Command(BaseCommand):
    help = (
        "Store the model files in DIR (save_pretrained output, or a hub download) in this "
        "node's model store (PODIUM_MODEL_STORE) as HUB_ID at --revision, and allow the "
        "challenge's agents to load it by that id. Run it on every GPU node (same files: same "
        "snapshot), or once on a store the nodes share."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("hub_id", help='e.g. "meta-llama/Llama-3.2-11B-Vision-Instruct"')
        parser.add_argument("directory", help="the model's files")
        parser.add_argument("--challenge", required=True, help="the challenge's slug")
        parser.add_argument("--revision", default="main")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            challenge = Challenge.objects.get(slug=options["challenge"])
        except Challenge.DoesNotExist:
            raise CommandError(f"no challenge {options['challenge']!r}") from None
        try:
            model = register(
                Path(settings.PODIUM_MODEL_STORE),
                options["hub_id"],
                Path(options["directory"]),
                options["revision"],
            )
        except (ModelStoreError, OSError) as exc:
            raise CommandError(str(exc)) from None
        HubModel.objects.update_or_create(
            challenge=challenge,
            hub_id=model.hub_id,
            revision=model.revision,
            defaults={"snapshot": model.snapshot, "size_bytes": model.size_bytes},
        )
        self.stdout.write(
            f"registered {model.hub_id}@{model.revision} for {challenge.slug}: snapshot "
            f"{model.snapshot}, {model.size_bytes} bytes, in {settings.PODIUM_MODEL_STORE}"
        )
