"""Statistics over conversations: bootstrap intervals and paired comparisons.

Every CRAG-MM truthfulness figure is a mean over *units* (a conversation's score in a
multi-turn run, a turn's score in a single-turn run, where each conversation is one turn), so
both tools here work on an array of unit values.

Bootstrap interval (percentile method, seeded): resample the units with replacement
``n_boot`` times and take the 2.5 % and 97.5 % quantiles of the resampled means. A resampled
mean depends only on how many times each *distinct* value was drawn, and those numbers follow a
multinomial distribution with the observed frequencies; the bootstrap draws them directly.
This is the ordinary nonparametric bootstrap, exactly, but costs ``n_boot x distinct values``
instead of ``n_boot x units`` (CRAG-MM scores take a few dozen distinct values at most), so
every slice of a 10,000-turn run gets its interval in milliseconds.

Paired test (seeded sign-flip permutation test): for two runs on the same units, the null
hypothesis is that each unit's difference is as likely to be positive as negative. Flipping
the signs of the ``k`` units that share a magnitude ``v`` changes the sum by
``v * (2 * Binomial(k, 1/2) - k)``; the test draws those binomials directly (again exact in
distribution). The p-value is ``(1 + #{|resampled sum| >= |observed sum|}) / (1 + n)``, so it
is never 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

CONFIDENCE = 0.95
DEFAULT_N_BOOT = 2000
DEFAULT_N_PERMUTATIONS = 10000
# Draw at most this many multinomial cells at once (bounds memory for many distinct values).
_CELLS_PER_CHUNK = 2_000_000


@dataclass(frozen=True)
class PairedComparison:
    """Mean difference (a - b) over paired units, its bootstrap interval and a p-value."""

    difference: float
    ci95: tuple[float, float]
    p_value: float
    units: int

    @property
    def separable(self) -> bool:
        """True when the interval excludes 0: the two runs differ at the 95 % level."""
        low, high = self.ci95
        return low > 0.0 or high < 0.0

    def result(self, metric: str, a: float, b: float, seed: int) -> dict[str, Any]:
        """A benchmark's ``compare`` result: the metric, both runs' values, this comparison."""
        return {
            "metric": metric,
            "a": a,
            "b": b,
            "difference": self.difference,
            "difference_ci95": list(self.ci95),
            "p_value": self.p_value,
            "separable": self.separable,
            "items": self.units,
            "seed": seed,
        }


def _as_units(values: np.ndarray | list[float]) -> np.ndarray:
    units = np.asarray(values, dtype=np.float64)
    if units.ndim != 1 or units.size == 0:
        raise ValueError("statistics need a non-empty one-dimensional array of unit values")
    if not np.all(np.isfinite(units)):
        raise ValueError("unit values must be finite numbers")
    return units


def bootstrap_mean_ci(
    values: np.ndarray | list[float],
    seed: int = 0,
    n_boot: int = DEFAULT_N_BOOT,
    confidence: float = CONFIDENCE,
) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of ``values`` (one value per unit).

    With a single unit, or all units equal, the interval is that value on both sides.
    """
    units = _as_units(values)
    if n_boot < 1:
        raise ValueError(f"n_boot must be at least 1, got {n_boot}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence}")
    distinct, counts = np.unique(units, return_counts=True)
    if distinct.size == 1:
        value = float(distinct[0])
        return value, value
    rng = np.random.default_rng(seed)
    frequencies = counts / units.size
    rows = max(1, _CELLS_PER_CHUNK // distinct.size)
    means = np.empty(n_boot, dtype=np.float64)
    for start in range(0, n_boot, rows):
        stop = min(n_boot, start + rows)
        draws = rng.multinomial(units.size, frequencies, size=stop - start)
        means[start:stop] = draws @ distinct / units.size
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(means, [tail, 1.0 - tail])
    return float(low), float(high)


def sign_flip_p_value(
    differences: np.ndarray | list[float],
    seed: int = 0,
    n_permutations: int = DEFAULT_N_PERMUTATIONS,
) -> float:
    """Two-sided p-value of a paired sign-flip permutation test on per-unit differences."""
    diffs = _as_units(differences)
    if n_permutations < 1:
        raise ValueError(f"n_permutations must be at least 1, got {n_permutations}")
    observed = abs(float(diffs.sum()))
    magnitudes, counts = np.unique(np.abs(diffs[diffs != 0.0]), return_counts=True)
    if magnitudes.size == 0:
        return 1.0
    rng = np.random.default_rng(seed)
    # Sums that differ from the observed one by rounding alone count as "as extreme".
    tolerance = 1e-9 * max(1.0, float(np.abs(diffs).sum()))
    rows = max(1, _CELLS_PER_CHUNK // magnitudes.size)
    extreme = 0
    for start in range(0, n_permutations, rows):
        stop = min(n_permutations, start + rows)
        positives = rng.binomial(counts, 0.5, size=(stop - start, magnitudes.size))
        sums = (2 * positives - counts) @ magnitudes
        extreme += int(np.count_nonzero(np.abs(sums) >= observed - tolerance))
    return (1 + extreme) / (1 + n_permutations)


def paired_comparison(
    a: np.ndarray | list[float],
    b: np.ndarray | list[float],
    seed: int = 0,
    n_boot: int = DEFAULT_N_BOOT,
    n_permutations: int = DEFAULT_N_PERMUTATIONS,
) -> PairedComparison:
    """Compare two runs' unit values, paired by position (unit ``i`` of ``a`` with ``b``'s)."""
    a_units, b_units = _as_units(a), _as_units(b)
    if a_units.shape != b_units.shape:
        raise ValueError(
            f"paired values need the same number of units, got {a_units.size} and {b_units.size}"
        )
    diffs = a_units - b_units
    return PairedComparison(
        difference=float(diffs.mean()),
        ci95=bootstrap_mean_ci(diffs, seed=seed, n_boot=n_boot),
        p_value=sign_flip_p_value(diffs, seed=seed, n_permutations=n_permutations),
        units=int(diffs.size),
    )
