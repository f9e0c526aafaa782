"""Importing a challenge's search corpus: from a directory (``manage.py import_corpus``) or an
uploaded tar of one (the challenge's admin page).

Every image entry and web page is read as the search service reads them before anything is
stored (a bad line is named, and nothing changes); then the corpus is stored under the
challenge, named by its sha256 (``leaderboard.pipeline.bundles.store_corpus``): importing the same
files again changes nothing, other files replace it for the runs that start from then on.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from evaluator.archives import ArchiveError
from leaderboard.models import Challenge
from leaderboard.pipeline.bundles import corpus_sha256, store_corpus
from leaderboard.splits import unpack_upload
from workers.faults import PodiumFault
from workers.search.corpus import Corpus, CorpusError


class CorpusImportError(Exception):
    """The corpus was not imported; the message says why."""


@dataclass(frozen=True)
class CorpusImport:
    sha256: str
    replaced: str | None  # the sha256 of the corpus it replaced; None when new or unchanged
    unchanged: bool
    image_entries: int
    web_pages: int

    def __str__(self) -> str:
        change = (
            "unchanged"
            if self.unchanged
            else f"replaces {self.replaced[:12]}"
            if self.replaced
            else "new"
        )
        return (
            f"corpus {self.sha256[:12]} ({change}): {self.image_entries} image entries, "
            f"{self.web_pages} web pages"
        )


def import_corpus_dir(challenge: Challenge, directory: str | Path) -> CorpusImport:
    """Check the corpus in ``directory``, then store it as ``challenge``'s. Raises
    :class:`CorpusImportError`."""
    corpus = Corpus(Path(directory))
    try:
        images, pages = len(corpus.image_entries()), len(corpus.web_pages())
    except (CorpusError, OSError) as exc:
        raise CorpusImportError(str(exc)) from None
    before = corpus_sha256(challenge)
    try:
        sha256 = store_corpus(challenge, directory)
    except PodiumFault as exc:
        raise CorpusImportError(str(exc)) from None
    unchanged = sha256 == before
    return CorpusImport(sha256, None if unchanged else before, unchanged, images, pages)


def import_corpus_archive(challenge: Challenge, upload: IO[bytes]) -> CorpusImport:
    """The same for a tar (plain or compressed) of a corpus directory, or of a folder holding
    one; unsafe members are refused (``evaluator.archives``)."""
    with tempfile.TemporaryDirectory(prefix="podium-corpus-") as scratch:
        try:
            root = unpack_upload(upload, Path(scratch))
        except ArchiveError as exc:
            raise CorpusImportError(f"the uploaded archive: {exc}") from None
        return import_corpus_dir(challenge, root)
