"""Files a challenge keeps in storage besides its splits: its search corpus and the
organisers' files added to its starter kit."""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from leaderboard.models.challenge import Challenge


class SearchCorpus(models.Model):
    """The challenge's search corpus: a reproducible tar of its directory, stored under the
    name of its sha256 (``leaderboard.pipeline.bundles.store_corpus``). The row and the tar are
    written in the caller's transaction; a tar replaced is deleted once it commits."""

    challenge = models.OneToOneField(
        Challenge, on_delete=models.CASCADE, related_name="stored_corpus"
    )
    bundle = models.FileField(upload_to="corpora/", max_length=500)
    sha256 = models.CharField(max_length=64)
    stored_at = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name_plural = "search corpora"

    def __str__(self) -> str:
        return f"{self.challenge.slug}: corpus {self.sha256[:12]}"


class KitFile(models.Model):
    """A file of the organisers' that the starter kit carries under ``files/<path>``
    (``leaderboard.kits.contents``), from a bundle's ``challenge.kit_files``."""

    challenge = models.ForeignKey(Challenge, on_delete=models.CASCADE, related_name="kit_files")
    path = models.CharField(max_length=500, help_text="its path in the bundle and in files/")
    file = models.FileField(upload_to="kit-files/", max_length=500)
    sha256 = models.CharField(max_length=64)
    size = models.BigIntegerField()

    class Meta:
        ordering = ("challenge", "path")
        constraints = (
            models.UniqueConstraint(fields=["challenge", "path"], name="kit_file_unique_path"),
        )

    def __str__(self) -> str:
        return f"{self.challenge.slug}: {self.path}"
