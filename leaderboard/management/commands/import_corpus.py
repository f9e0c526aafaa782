"""``manage.py import_corpus --challenge SLUG DIR``: check a search corpus directory (every image
entry and web page read as the search service reads them) and store it as the challenge's
corpus (``workers.pipeline.bundles.store_corpus``); importing the same files again changes
nothing, other files replace it for runs that start from then on."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from leaderboard.models import Challenge
from workers.faults import PodiumFault
from workers.pipeline.bundles import corpus_sha256, store_corpus
from workers.search.corpus import Corpus, CorpusError


class Command(BaseCommand):
    help = (
        "Check the search corpus in DIR (images.jsonl, web.jsonl, images/: docs/internals.md) "
        "and store it as the challenge's corpus, named by its sha256."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("directory", help="the corpus directory")
        parser.add_argument("--challenge", required=True, help="the challenge's slug")

    def handle(self, *args, **options) -> None:
        try:
            challenge = Challenge.objects.get(slug=options["challenge"])
        except Challenge.DoesNotExist:
            raise CommandError(f"no challenge {options['challenge']!r}") from None
        directory = Path(options["directory"])
        corpus = Corpus(directory)
        try:
            images, pages = len(corpus.image_entries()), len(corpus.web_pages())
        except (CorpusError, OSError) as exc:
            raise CommandError(f"not imported: {exc}") from None
        before = corpus_sha256(challenge)
        try:
            sha256 = store_corpus(challenge, directory)
        except PodiumFault as exc:
            raise CommandError(f"not imported: {exc}") from None
        change = "unchanged" if sha256 == before else f"replaces {before[:12]}" if before else "new"
        self.stdout.write(
            f"{challenge.slug}: corpus {sha256[:12]} ({change}): {images} image entries, "
            f"{pages} web pages"
        )
