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

    def __str__(self) -> str:
        return f"run #{self.run_id}: {len(self.values) // UNIT_DTYPE.itemsize} {self.metric} units"

    def array(self) -> np.ndarray:
        return decode(bytes(self.values))


def encode(values: np.ndarray) -> bytes:
    return np.asarray(values, dtype=UNIT_DTYPE).tobytes()


def decode(data: bytes) -> np.ndarray:
    return np.frombuffer(data, dtype=UNIT_DTYPE).astype(np.float64)
