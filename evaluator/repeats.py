"""Statistics of entries evaluated k times on the same units: repeated runs of one agent on
one split (an organiser's "repeat the final entries"), pure arithmetic.

An entry's ``k`` runs give ``k`` scores and, per run, the values of the benchmark's paired
metric per unit (a conversation, an item: ``values``, ``k x units``; the score of a run is the
mean of its units for every benchmark Podium hosts).

- Mean: the mean of the ``k`` run scores.
- Between-run standard deviation: the sample standard deviation (ddof 1) of the ``k`` run
  scores: how much one run's score moves from run to run.
- Interval: a bootstrap over units of the per-unit mean across the ``k`` runs. Each unit's
  ``k`` values stay together (a unit is drawn with all its runs), and the resampled statistic
  is the mean of the drawn units' per-unit means. The variance of one unit's mean across runs
  is the spread of units plus the run-to-run spread within a unit over ``k``, so the interval
  holds both: the variance of the entry's mean is ``(s_units^2 + s_runs^2 / k) / n``, where a
  single run's interval has only the first term (Miller, "Adding Error Bars to Evals", 2024,
  section on resampling answers). The percentile interval of the resampled means is moved by
  the difference between the scores' mean and the units' mean (0 for Podium's benchmarks),
  so it stands around the mean shown. Entries on the same units share the resamples' draws
  (``evaluator.board_stats.resample_counts``): a board's entries cost one matrix product.
- pass^k (tau-bench, Yao et al., 2024): the share of units that pass in every one of the
  ``k`` runs, a unit passing when its value reaches the benchmark's ``passing`` value
  (``Scoring.passing_unit``; CRAG-MM: 1.0, a correct answer). None when the benchmark has no
  passing value.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from evaluator.board_stats import resample_counts
from evaluator.stats import CONFIDENCE

DEFAULT_REPEAT_BOOT = 1000
Runs = np.ndarray | Sequence[Sequence[float]]  # k runs x units


@dataclass(frozen=True)
class RepeatStatistics:
    """An entry's ``runs`` runs on ``units`` units: the mean of their scores, its interval
    with the variance between runs, the scores' standard deviation and pass^k."""

    runs: int
    units: int
    mean: float
    low: float
    high: float
    between_sd: float
    pass_k: float | None


def _runs(values: Runs) -> np.ndarray:
    runs = np.asarray(values, dtype=np.float64)
    if runs.ndim != 2 or runs.shape[0] < 2 or runs.shape[1] < 1:
        raise ValueError("repeat statistics need two runs or more, each with its unit values")
    if not np.all(np.isfinite(runs)):
        raise ValueError("unit values must be finite numbers")
    return runs


def pass_k(values: Runs, passing: float) -> float:
    """The share of units whose value reaches ``passing`` in every run (runs x units)."""
    runs = _runs(values)
    return float(np.mean(np.all(runs >= passing, axis=0)))


def between_sd(scores: Sequence[float]) -> float:
    """The sample standard deviation (ddof 1) of the runs' scores."""
    if len(scores) < 2:
        raise ValueError("a standard deviation between runs needs two runs or more")
    return float(np.std(np.asarray(scores, dtype=np.float64), ddof=1))


def repeat_statistics(
    scores: Sequence[Sequence[float]],
    values: Sequence[Runs],
    passing: float | None = None,
    confidence: float = CONFIDENCE,
    n_boot: int = DEFAULT_REPEAT_BOOT,
    seed: int = 0,
) -> list[RepeatStatistics]:
    """Each entry's statistics (see the module's notes): ``scores[e]`` its ``k`` run scores,
    ``values[e]`` their unit values (``k x units``). Entries on the same number of units share
    the bootstrap's draws."""
    if len(scores) != len(values):
        raise ValueError(f"{len(scores)} entries' scores for {len(values)} entries' units")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence}")
    if n_boot < 1:
        raise ValueError(f"n_boot must be at least 1, got {n_boot}")
    # one entry's runs at a time: only their per-unit means are kept (entries x units)
    shapes: list[tuple[int, int]] = []
    unit_means: list[np.ndarray] = []
    passed: list[float | None] = []
    for entry, (given, value) in enumerate(zip(scores, values, strict=True)):
        run = _runs(value)
        if len(given) != run.shape[0]:
            raise ValueError(f"entry {entry}: {len(given)} scores for {run.shape[0]} runs")
        shapes.append(run.shape)
        unit_means.append(run.mean(axis=0))
        passed.append(None if passing is None else pass_k(run, passing))
    tail = (1.0 - confidence) / 2.0
    bounds: dict[int, tuple[float, float]] = {}
    by_units: dict[int, list[int]] = {}
    for entry, (_, n) in enumerate(shapes):
        by_units.setdefault(n, []).append(entry)
    for n, entries in by_units.items():
        means = np.vstack([unit_means[e] for e in entries])  # entries x units
        counts = resample_counts(n, n_boot, np.random.default_rng(seed))
        resampled = counts.astype(np.float64) @ means.T / n  # n_boot x entries
        low = np.quantile(resampled, tail, axis=0)
        high = np.quantile(resampled, 1.0 - tail, axis=0)
        centre = means.mean(axis=1)
        for position, entry in enumerate(entries):
            bounds[entry] = (low[position] - centre[position], high[position] - centre[position])
    found = []
    for entry, given in enumerate(scores):
        mean = float(np.mean(np.asarray(given, dtype=np.float64)))
        below, above = bounds[entry]
        found.append(
            RepeatStatistics(
                runs=shapes[entry][0],
                units=shapes[entry][1],
                mean=mean,
                low=float(mean + below),
                high=float(mean + above),
                between_sd=between_sd(given),
                pass_k=passed[entry],
            )
        )
    return found
