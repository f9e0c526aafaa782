"""Admin of what Podium stores beside the runs: what challenge bundles import
(``docs/challenge-bundle.md``: the versions, the search corpora, the starter kits' organiser
files) and the agent images' archives (``docs/deploy.md``); read only."""

from __future__ import annotations

from django.contrib import admin

from leaderboard.admin.read_only import ReadOnly
from leaderboard.models import ChallengeVersion, ImageArchive, KitFile, SearchCorpus


@admin.register(ChallengeVersion)
class ChallengeVersionAdmin(ReadOnly[ChallengeVersion]):
    """The bundles imported (``docs/challenge-bundle.md``): read only."""

    list_display = ("challenge", "number", "imported_at", "imported_by", "via")
    list_filter = ("via",)
    search_fields = ("challenge__slug",)
    readonly_fields = ("challenge", "number", "imported_at", "imported_by", "via", "changes",
                       "document")  # fmt: skip


@admin.register(SearchCorpus)
class SearchCorpusAdmin(ReadOnly[SearchCorpus]):
    """Each challenge's stored corpus (imported on the challenge's admin page, by
    ``manage.py import_corpus`` or a bundle)."""

    list_display = ("challenge", "sha256", "stored_at")
    search_fields = ("challenge__slug", "sha256")


@admin.register(KitFile)
class KitFileAdmin(ReadOnly[KitFile]):
    """The organisers' files in the starter kits (a bundle's ``challenge.kit_files``)."""

    list_display = ("challenge", "path", "size", "sha256")
    list_filter = ("challenge",)
    search_fields = ("path", "challenge__slug")


@admin.register(ImageArchive)
class ImageArchiveAdmin(ReadOnly[ImageArchive]):
    """Agent images' archives for the other nodes: owed by a node, stored, or swept
    (``PODIUM_IMAGE_STORE``, ``PODIUM_IMAGE_STORE_KEEP_S``)."""

    list_display = ("image_id", "state", "node", "size", "stored_at", "swept_at")
    list_filter = ("state",)
    search_fields = ("image_id", "node")
