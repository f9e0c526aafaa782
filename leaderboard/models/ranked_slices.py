"""A dimension's statistics per slice value on a split's board, as stored for one version of
the split's results (``leaderboard.slice_store``)."""

from __future__ import annotations

from django.db import models

from leaderboard.models.split import Split


class RankedSlices(models.Model):
    """The rank intervals, groups, minimum detectable effects and calibrated scores of every
    value of ``dimension`` on the board of ``split`` in ``setting`` (``SliceStatistics`` as
    plain data, ``slice_store.encoded``), computed for the split's ``results_version``: a page
    shows them only while that is still the split's version. One row per split, setting and
    dimension, replaced when they are computed for a newer version."""

    split = models.ForeignKey(Split, on_delete=models.CASCADE, related_name="+", db_index=False)
    setting = models.CharField(max_length=32, blank=True)
    dimension = models.CharField(max_length=100)
    results_version = models.UUIDField()
    statistics = models.BinaryField()  # ``slice_store.encoded``
    seconds = models.FloatField(default=0.0)  # how long computing them took

    class Meta:
        verbose_name_plural = "ranked slices"
        constraints = (
            models.UniqueConstraint(
                fields=["split", "setting", "dimension"], name="ranked_slices_once"
            ),
        )

    def __str__(self) -> str:
        return f"{self.split_id} [{self.setting}] {self.dimension} @ {self.results_version}"
