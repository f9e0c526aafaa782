"""A task's splits and their versions: data a run answers, and the boards it is ranked on."""

from __future__ import annotations

import uuid
from datetime import datetime

from django.db import models
from django.utils import timezone

from leaderboard.models.challenge import Task, split_bundle_path


class SplitQuerySet(models.QuerySet["Split"]):
    def current(self) -> SplitQuerySet:
        """The current version of each (task, kind): what pages, the API, new runs, kits,
        exports and the checklist use."""
        return self.filter(superseded_at__isnull=True)

    def of_version(self, asked: str | None) -> SplitQuerySet:
        """The current versions (``asked`` None), or those numbered ``asked`` (a request's
        ``?version=``); ``ValueError`` when it is no version number."""
        if asked is None:
            return self.current()
        if not asked.isdigit() or int(asked) < 1:
            raise ValueError(f"version={asked!r}: a split version is a number from 1")
        return self.filter(version=int(asked))


def current_splits() -> models.Prefetch[str, SplitQuerySet]:
    """``prefetch_related`` of a task's current splits (``task.splits.all()`` then holds
    them only)."""
    return models.Prefetch("splits", queryset=Split.objects.current())


class Split(models.Model):
    """A split of a task; its data bundle (a tar of the split directory) is never served.

    A (task, kind) has versions 1, 2, ...: data changed under a split that has runs becomes a
    new version (``leaderboard.splits.save_split``), the earlier one is superseded
    (``superseded_at``) and keeps its runs, scores and boards; exactly one is current.
    """

    class Kind(models.TextChoices):
        VALIDATION = "validation", "validation"
        PUBLIC_TEST = "public-test", "public test"
        PRIVATE_TEST = "private-test", "private test"

    class Visibility(models.TextChoices):
        PUBLIC = "public", "results public (private test: after reveal)"
        HIDDEN = "hidden", "results shown to organisers only"

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="splits")
    kind = models.CharField(max_length=16, choices=Kind)
    bundle = models.FileField(upload_to=split_bundle_path, max_length=500, blank=True)
    sha256 = models.CharField(max_length=64, blank=True, help_text="of the bundle's bytes")
    # its size in its benchmark's words (``Benchmark.split_counts``): CRAG-MM's conversations and
    # turns, Visual-RAG's species and queries
    groups = models.PositiveIntegerField(default=0)
    items = models.PositiveIntegerField(default=0)
    visibility = models.CharField(max_length=16, choices=Visibility, default=Visibility.PUBLIC)
    reveal_at = models.DateTimeField(
        null=True, blank=True, help_text="results appear from then on; private test: required"
    )
    imported_at = models.DateTimeField(null=True, blank=True)
    results_version = models.UUIDField(
        default=uuid.uuid4,
        editable=False,
        help_text="changes whenever the split's results change (keys the pages' cache)",
    )
    # set when a results change sends the task storing its per-slice statistics: a version
    # still without stored rows PODIUM_UNCLAIMED_RESEND_S later is sent again by the reaper
    # (``slice_store.resend_waiting``)
    slice_statistics_due_at = models.DateTimeField(null=True, blank=True, editable=False)
    version = models.PositiveIntegerField(default=1, editable=False)
    superseded_at = models.DateTimeField(
        null=True,
        blank=True,
        editable=False,
        help_text="when a newer version of this task's split replaced it (empty: current)",
    )

    objects = SplitQuerySet.as_manager()

    class Meta:
        ordering = ("task", "kind", "version")
        constraints = (
            models.UniqueConstraint(
                fields=["task", "kind", "version"], name="split_unique_version"
            ),
            models.UniqueConstraint(
                fields=["task", "kind"],
                condition=models.Q(superseded_at__isnull=True),
                name="split_one_current",
            ),
        )

    def __str__(self) -> str:
        shown = f"{self.task}/{self.kind}"
        return shown if self.version == 1 else f"{shown} (version {self.version})"

    @property
    def is_current(self) -> bool:
        return self.superseded_at is None

    @property
    def is_private(self) -> bool:
        return self.kind == self.Kind.PRIVATE_TEST

    def is_revealed(self, now: datetime | None = None) -> bool:
        """Whether results are public: never when hidden; a private test only from reveal_at."""
        if self.visibility == self.Visibility.HIDDEN:
            return False
        if self.reveal_at is not None:
            return (now or timezone.now()) >= self.reveal_at
        return not self.is_private
