"""A run's per-unit values of its primary metric: what a board's rank intervals and groups
resample (``leaderboard.board_statistics``)."""

from __future__ import annotations

import numpy as np
from django.db import models

from leaderboard.models.submission import EvaluationRun

# float32, little-endian: 40 kB for a 10,000-unit split; exact for the benchmarks' values
# (multiples of 1/k for small k, or percentages) to seven digits, which is all a rank needs
UNIT_DTYPE = np.dtype("<f4")


class RunUnits(models.Model):
    """The values of ``metric`` per unit (conversation, item) the benchmark's paired
    comparison pairs, in the order every run of the split shares (``Scoring.units``); written
    with the run's scores (``scores.store_units``)."""

    run = models.OneToOneField(
        EvaluationRun, on_delete=models.CASCADE, primary_key=True, related_name="units"
    )
    metric = models.CharField(max_length=64)
    values = models.BinaryField()
    # how many of the run's items the judge gave each verdict: the shares a judge audit's
    # correction weighs (``leaderboard.calibration``)
    verdicts = models.JSONField(default=dict)
    # the same per slice value: {dimension: {value: {verdict: count}}}, what a slice's
    # calibrated score weighs (``leaderboard.slice_calibration``)
    slice_verdicts = models.JSONField(default=dict)
    # which slice value each unit belongs to (``Scoring.unit_slices``), shared by the runs of a
    # split: ``UnitSlices.digest``; blank when the benchmark does not say
    slices = models.CharField(max_length=64, blank=True)

    def __str__(self) -> str:
        return f"run #{self.run_id}: {len(self.values) // UNIT_DTYPE.itemsize} {self.metric} units"

    def array(self) -> np.ndarray:
        return decode(bytes(self.values))


def encode(values: np.ndarray) -> bytes:
    return np.asarray(values, dtype=UNIT_DTYPE).tobytes()


def decode(data: bytes) -> np.ndarray:
    return np.frombuffer(data, dtype=UNIT_DTYPE).astype(np.float64)


# a unit whose items have several values of a dimension (a conversation's turns): in no slice
SPANS = 0xFFFF
CODE_DTYPE = np.dtype("<u2")


class UnitSlices(models.Model):
    """Which slice value each unit of a split belongs to, per dimension (``Scoring.
    unit_slices``), stored once for every run scored on the same units with the same labels
    (``digest``: their SHA-256): ``{dimension: {"values": [...], "codes": base64}}``, the
    codes little-endian uint16 indices into ``values`` (``SPANS``: in none). 20 kB a dimension
    for 10,000 units."""

    digest = models.CharField(max_length=64, primary_key=True)
    dimensions = models.JSONField(default=dict)

    def __str__(self) -> str:
        return f"unit slices {self.digest[:12]}: {', '.join(sorted(self.dimensions))}"
