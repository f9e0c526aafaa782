"""Statistics over a whole board: rank intervals, separable groups and the split's minimum
detectable effect, from every ranked entry's per-unit values on the same units.

A board's units (``values``: one row per entry in the board's order, one column per unit: a
conversation, an item, as the benchmark's paired comparison pairs them) are what the entries'
scores are means of.

Rank intervals (``rank_intervals``): a paired bootstrap over units. Each resample draws ``n``
units with replacement, the *same* draw for every entry, and ranks the entries by their
resampled means as the board does (equal means share the better rank, or the earlier entry
ranks first); an entry's interval is the ``(1 - confidence) / 2`` and ``(1 + confidence) / 2``
quantiles of its ranks, widened to hold its rank on the board. Resampled means are one matrix
product: the resamples' unit counts (``n_boot x n``) times the values (``n x entries``).

Separable groups (``groups``): each entry against the one above it, a paired z-test on the
per-unit differences (normal approximation, fine for the hundreds of units a split has); the
``entries - 1`` p-values are corrected together for multiple comparisons (Holm's step-down by
default, or Bonferroni, or none), and an entry starts a new group where the corrected p-value is
below ``alpha``; else it joins the group above.

Minimum detectable effect (``minimum_detectable_effect``): the difference two entries must have
for a two-sided paired z-test at level ``alpha`` to find it with probability ``power``:
``(z(1 - alpha / 2) + z(power)) * s / sqrt(n)``, where ``s`` is the standard deviation of the
per-unit differences of two entries of typical agreement (the median over the board's
neighbouring pairs).

A board ranked by scores calibrated by people's labels (``Rectified``: an entry's score is its
units' mean plus its shares of the judge's verdicts times the corrections the labels make to
each, ``evaluator.calibrated``) resamples the labels too: each resample adds to every entry's
resampled mean its shares times that resample's corrections (the labels resampled within each
verdict, ``calibrated.stratum_corrections``), so its rank intervals hold both the items' and the
labels' uncertainty; and a paired test's difference adds the two entries' corrections' difference,
its variance the corrections' (``sum_h (W_ah - W_bh)^2 var_h / n_h``). The minimum detectable
effect stays the judge's units'.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy.stats import norm, rankdata

from evaluator.calibrated import Corrections
from evaluator.stats import CONFIDENCE

DEFAULT_RANK_BOOT = 1000
ALPHA = 0.05
POWER = 0.80
Values = np.ndarray | Sequence[Sequence[float]]  # entries x units
Correction = Literal["holm", "bonferroni", "none"]
CORRECTIONS: tuple[Correction, ...] = ("holm", "bonferroni", "none")
# Bootstrap means equal up to this many decimals are ties (float sums of equal rows may differ
# in their last bits).
_DECIMALS = 10


def _matrix(values: Values) -> np.ndarray:
    units = np.asarray(values, dtype=np.float64)
    if units.ndim != 2 or units.shape[0] == 0 or units.shape[1] < 2:
        raise ValueError("board statistics need entries x units values, with two units or more")
    if not np.all(np.isfinite(units)):
        raise ValueError("unit values must be finite numbers")
    return units


@dataclass(frozen=True)
class Rectified:
    """Scores calibrated by people's labels: each entry's shares of the strata (entries x
    strata, in the board's order; a row of zeros for an entry not calibrated) and the strata's
    corrections, resampled as many times as the board's units."""

    shares: np.ndarray
    corrections: Corrections

    def __post_init__(self) -> None:
        if self.shares.ndim != 2 or self.shares.shape[1] != len(self.corrections.strata):
            raise ValueError("shares: one row per entry, one column per stratum")

    def offsets(self) -> np.ndarray:
        """Each entry's correction (entries)."""
        result: np.ndarray = self.shares @ self.corrections.mean
        return result

    def resampled(self, n_boot: int) -> np.ndarray:
        """Each resample's correction of each entry (n_boot x entries)."""
        if self.corrections.draws.shape[0] != n_boot:
            raise ValueError(
                f"{self.corrections.draws.shape[0]} resamples of the labels for {n_boot} of "
                "the units"
            )
        result: np.ndarray = self.corrections.draws @ self.shares.T
        return result


def _rectified(rectified: Rectified | None, entries: int) -> Rectified | None:
    if rectified is not None and rectified.shares.shape[0] != entries:
        raise ValueError(f"shares of {rectified.shares.shape[0]} entries for {entries}")
    return rectified


def board_ranks(means: np.ndarray, higher_is_better: bool, shared: bool) -> np.ndarray:
    """The ranks (from 1) of entries with these ``means`` along the last axis, entries in the
    board's order: equal means share the better rank (``shared``), else the earlier ranks first."""
    keys = -means if higher_is_better else means
    ranks: np.ndarray = rankdata(keys, method="min" if shared else "ordinal", axis=-1)
    return ranks.astype(np.int64)


def resample_counts(units: int, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """How many times each of ``units`` units is drawn in each of ``n_boot`` resamples of
    ``units`` draws with replacement (``n_boot x units``)."""
    drawn = rng.integers(0, units, size=(n_boot, units))
    drawn += np.arange(n_boot)[:, None] * units
    return np.bincount(drawn.ravel(), minlength=n_boot * units).reshape(n_boot, units)


def rank_intervals(
    values: Values,
    higher_is_better: bool = True,
    shared: bool = True,
    confidence: float = CONFIDENCE,
    n_boot: int = DEFAULT_RANK_BOOT,
    seed: int = 0,
    observed: Sequence[int] | None = None,
    rectified: Rectified | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The lowest and highest rank (numbers, 1 is first) each entry takes in the central
    ``confidence`` share of a paired bootstrap over units (see the module's notes), widened to
    hold its rank on the board (``observed``; by default its rank by its mean here); with
    ``rectified``, by the calibrated scores, the labels resampled too."""
    units = _matrix(values)
    rectified = _rectified(rectified, units.shape[0])
    if n_boot < 1:
        raise ValueError(f"n_boot must be at least 1, got {n_boot}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence}")
    entries, n = units.shape
    if observed is None:
        means = units.mean(axis=1) + (rectified.offsets() if rectified else 0.0)
        on_board = board_ranks(np.round(means, _DECIMALS), higher_is_better, shared)
    else:
        on_board = np.asarray(observed, dtype=np.int64)
        if on_board.shape != (entries,):
            raise ValueError(f"{on_board.size} observed ranks for {entries} entries")
    if entries == 1:
        return on_board.copy(), on_board.copy()
    counts = resample_counts(n, n_boot, np.random.default_rng(seed))
    means = counts.astype(np.float64) @ units.T / n  # n_boot x entries
    if rectified is not None:
        means += rectified.resampled(n_boot)
    means = np.round(means, _DECIMALS)
    ranks = board_ranks(means, higher_is_better, shared)
    tail = (1.0 - confidence) / 2.0
    low = np.quantile(ranks, tail, axis=0, method="lower").astype(np.int64)
    high = np.quantile(ranks, 1.0 - tail, axis=0, method="higher").astype(np.int64)
    return np.minimum(low, on_board), np.maximum(high, on_board)


def _difference_spread(units: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard deviation (ddof 1) of each neighbouring pair's per-unit differences
    (entry i minus entry i + 1), without forming the differences."""
    n = units.shape[1]
    means = units.mean(axis=1)
    centred = units - means[:, None]
    squares = np.einsum("ij,ij->i", centred, centred)
    cross = np.einsum("ij,ij->i", centred[:-1], centred[1:])
    variance = np.maximum(squares[:-1] + squares[1:] - 2.0 * cross, 0.0) / (n - 1)
    return means[:-1] - means[1:], np.sqrt(variance)


def adjacent_p_values(values: Values, rectified: Rectified | None = None) -> np.ndarray:
    """Two-sided p-values of paired z-tests of each entry against the one above it
    (``entries - 1`` of them; a difference with no spread: 1 when 0, else 0); with
    ``rectified``, of their calibrated scores."""
    units = _matrix(values)
    rectified = _rectified(rectified, units.shape[0])
    difference, spread = _difference_spread(units)
    n = units.shape[1]
    variance = spread**2 / n
    if rectified is not None:
        apart = rectified.shares[:-1] - rectified.shares[1:]
        difference = difference + apart @ rectified.corrections.mean
        variance = variance + apart**2 @ rectified.corrections.variance
    error = np.sqrt(variance)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.abs(difference) / error
    z = np.where(error > 0, z, np.where(np.abs(difference) > 1e-12, np.inf, 0.0))
    p: np.ndarray = 2.0 * norm.sf(z)
    return p


def corrected(p_values: np.ndarray, correction: Correction = "holm") -> np.ndarray:
    """``p_values`` adjusted for being tested together: Holm's step-down, Bonferroni, or not."""
    p = np.asarray(p_values, dtype=np.float64)
    m = p.size
    if correction == "none" or m == 0:
        return p.copy()
    if correction == "bonferroni":
        return np.minimum(1.0, p * m)
    if correction != "holm":
        raise ValueError(f"unknown correction {correction!r}: one of {', '.join(CORRECTIONS)}")
    order = np.argsort(p, kind="stable")
    stepped = np.maximum.accumulate(np.minimum(1.0, (m - np.arange(m)) * p[order]))
    adjusted = np.empty(m)
    adjusted[order] = stepped
    return adjusted


def groups(
    values: Values,
    alpha: float = ALPHA,
    correction: Correction = "holm",
    rectified: Rectified | None = None,
) -> list[int]:
    """Each entry's group (from 1), entries in the board's order: an entry joins the group
    above it unless the corrected paired test tells the two apart at level ``alpha`` (of the
    calibrated scores, with ``rectified``)."""
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be between 0 and 1, got {alpha}")
    units = _matrix(values)
    if units.shape[0] == 1:
        return [1]
    apart = corrected(adjacent_p_values(units, rectified), correction) < alpha
    return [1, *(1 + np.cumsum(apart)).tolist()]


def minimum_detectable_effect(
    values: Values, alpha: float = ALPHA, power: float = POWER
) -> float | None:
    """The smallest difference between two entries of typical agreement that a paired test at
    level ``alpha`` finds with probability ``power`` on these units; None with one entry."""
    units = _matrix(values)
    if units.shape[0] < 2:
        return None
    _, spread = _difference_spread(units)
    typical = float(np.median(spread))
    z = norm.ppf(1.0 - alpha / 2.0) + norm.ppf(power)
    return float(z * typical / np.sqrt(units.shape[1]))


@dataclass(frozen=True)
class BoardStatistics:
    """What a board shows beside its ranks, entries in the board's order."""

    rank_low: list[int]
    rank_high: list[int]
    groups: list[int]
    minimum_detectable_effect: float | None
    units: int
    confidence: float
    alpha: float
    correction: Correction
    n_boot: int


def board_statistics(
    values: Values,
    higher_is_better: bool = True,
    shared: bool = True,
    confidence: float = CONFIDENCE,
    correction: Correction = "holm",
    n_boot: int = DEFAULT_RANK_BOOT,
    seed: int = 0,
    observed: Sequence[int] | None = None,
    rectified: Rectified | None = None,
) -> BoardStatistics:
    """Rank intervals, groups and the minimum detectable effect of one board's ranked entries
    (``values``: entries in the board's order x units; ``rectified``: ranked by their scores
    calibrated by people's labels); the groups' level is ``1 - confidence``."""
    units = _matrix(values)
    low, high = rank_intervals(
        units, higher_is_better, shared, confidence, n_boot, seed, observed, rectified
    )
    alpha = round(1.0 - confidence, 12)
    return BoardStatistics(
        rank_low=low.tolist(),
        rank_high=high.tolist(),
        groups=groups(units, alpha, correction, rectified),
        minimum_detectable_effect=minimum_detectable_effect(units, alpha),
        units=int(units.shape[1]),
        confidence=confidence,
        alpha=alpha,
        correction=correction,
        n_boot=n_boot,
    )
