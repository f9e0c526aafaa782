"""``manage.py import_corpus --challenge SLUG DIR``: check a search corpus directory (every image
entry and web page read as the search service reads them) and store it as the challenge's
corpus (``leaderboard.pipeline.bundles.store_corpus``); importing the same files again changes
nothing, other files replace it for runs that start from then on."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from leaderboard.corpora import CorpusImportError, import_corpus_dir
from leaderboard.models import Challenge


class Command(BaseCommand):
    help = (
        "Check the search corpus in DIR (images.jsonl, web.jsonl, images/: docs/internals.md) "
        "and store it as the challenge's corpus, named by its sha256."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("directory", help="the corpus directory")
        parser.add_argument("--challenge", required=True, help="the challenge's slug")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            challenge = Challenge.objects.get(slug=options["challenge"])
        except Challenge.DoesNotExist:
            raise CommandError(f"no challenge {options['challenge']!r}") from None
        try:
            imported = import_corpus_dir(challenge, options["directory"])
        except CorpusImportError as exc:
            raise CommandError(f"not imported: {exc}") from None
        self.stdout.write(f"{challenge.slug}: {imported}")
