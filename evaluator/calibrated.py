"""A judge's score calibrated by people's labels: prediction-powered inference of a mean
(Angelopoulos et al., 2023, "Prediction-powered inference", Science 382; Boyeau et al., 2024,
"AutoEval done right"), stratified as a judge audit draws its sample.

The judge graded all ``N`` items (values ``f``); people labelled a random sample of ``n`` of
them (their values ``y``, the judge's on the same items ``f_n``). The people's score is
estimated as the judge's mean plus the mean correction the labels show::

    theta = mean(f) + mean(y_n - f_n)
    var   = var(f) / N + var(y_n - f_n) / n          (sample variances, ddof 1)

with a normal interval ``theta +- z * sqrt(var)``. It is unbiased whatever the judge's errors;
the interval is valid when the labelled items are a random sample of the items, and narrower
than the people's labels alone give (``var(y_n) / n``) as much as the judge agrees with them.

A judge audit draws its sample stratified (by the judge's verdict and a slice,
``evaluator.judge_audit.draw``): each stratum ``h`` holds a share ``W_h`` of all ``N`` items and
gives ``n_h`` labels. The correction is then the strata's, weighted by their shares::

    theta = mean(f) + sum_h W_h mean_h(y - f)
    var   = var(f) / N + sum_h W_h^2 var_h(y - f) / n_h

(a stratum of one label takes the pooled variance of the corrections). ``labels_only`` is the
same estimate without the judge (``f = 0``): the interval people's labels alone give.

``stratum_corrections`` gives each stratum's mean correction and its variance apart, with
resamples of its labels (a bootstrap within each stratum): a board ranked by calibrated scores
resamples them beside its units for its rank intervals (``evaluator.board_stats``).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import norm

from evaluator.stats import CONFIDENCE


@dataclass(frozen=True)
class Calibrated:
    """An estimate of the people's score: its value, standard error, interval, and the labels
    and items behind it."""

    value: float
    standard_error: float
    ci: tuple[float, float]
    labels: int
    items: int

    @property
    def width(self) -> float:
        return self.ci[1] - self.ci[0]


def _array(values: Sequence[float] | np.ndarray, name: str) -> np.ndarray:
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1 or array.size == 0:
        raise ValueError(f"{name}: expected a non-empty list of numbers")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name}: values must be finite numbers")
    return array


def _strata(
    labelled: int, strata: Sequence[Hashable] | None, shares: Mapping[Hashable, float] | None
) -> tuple[np.ndarray, dict[Hashable, float]]:
    if strata is None:
        return np.zeros(labelled, dtype=np.int64), {0: 1.0}
    if len(strata) != labelled:
        raise ValueError(f"strata: {len(strata)} for {labelled} labels")
    if shares is None:
        raise ValueError("stratified labels need each stratum's share of the items")
    missing = {key for key in strata if key not in shares}
    if missing:
        raise ValueError(f"strata without a share of the items: {sorted(map(str, missing))}")
    keys = list(shares)
    index = {key: i for i, key in enumerate(keys)}
    return np.array([index[key] for key in strata]), {i: shares[key] for i, key in enumerate(keys)}


def _correction(
    rectifier: np.ndarray, codes: np.ndarray, shares: Mapping[Hashable, float]
) -> tuple[float, float]:
    """The weighted mean of the strata's means of ``rectifier`` and its variance; a stratum
    with no labels counts 0 (its share is then missing from the estimate: see the docs)."""
    pooled = float(rectifier.var(ddof=1)) if rectifier.size > 1 else 0.0
    mean = variance = 0.0
    for code, share in shares.items():
        mine = rectifier[codes == code]
        if mine.size == 0:
            continue
        spread = float(mine.var(ddof=1)) if mine.size > 1 else pooled
        mean += share * float(mine.mean())
        variance += share**2 * spread / mine.size
    return mean, variance


@dataclass(frozen=True)
class Corrections:
    """Per stratum (``strata``' order): the mean correction its labels make (``mean``:
    ``mean_h(y - f)``), the variance of that mean (``variance``: ``var_h(y - f) / n_h``), and
    the means of ``draws.shape[0]`` resamples of its labels with replacement (``draws``:
    resamples x strata). A stratum with no labels corrects by 0, with no variance."""

    strata: tuple[Hashable, ...]
    mean: np.ndarray
    variance: np.ndarray
    draws: np.ndarray


def stratum_corrections(
    judge_on_labelled: Sequence[float] | np.ndarray,
    labels: Sequence[float] | np.ndarray,
    strata: Sequence[Hashable],
    keys: Sequence[Hashable],
    n_boot: int,
    seed: int = 0,
) -> Corrections:
    """Each of the strata ``keys``' corrections from the labels in it (``strata``: each
    label's), as ``corrected_score`` weighs them, and ``n_boot`` resamples of them."""
    f_n = _array(judge_on_labelled, "judge_on_labelled")
    y_n = _array(labels, "labels")
    if f_n.size != y_n.size or len(strata) != y_n.size:
        raise ValueError(f"{f_n.size} judge values and {len(strata)} strata for {y_n.size} labels")
    rectifier = y_n - f_n
    pooled = float(rectifier.var(ddof=1)) if rectifier.size > 1 else 0.0
    rng = np.random.default_rng(seed)
    mean, variance = np.zeros(len(keys)), np.zeros(len(keys))
    draws = np.zeros((n_boot, len(keys)))
    for column, key in enumerate(keys):
        mine = rectifier[[i for i, found in enumerate(strata) if found == key]]
        if mine.size == 0:
            continue
        mean[column] = mine.mean()
        variance[column] = (float(mine.var(ddof=1)) if mine.size > 1 else pooled) / mine.size
        draws[:, column] = mine[rng.integers(0, mine.size, size=(n_boot, mine.size))].mean(axis=1)
    return Corrections(tuple(keys), mean, variance, draws)


def _interval(value: float, variance: float, confidence: float) -> tuple[float, float]:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence}")
    half = float(norm.ppf((1.0 + confidence) / 2.0)) * float(np.sqrt(variance))
    return value - half, value + half


def corrected_score(
    score: float,
    score_error: float,
    judge_on_labelled: Sequence[float] | np.ndarray,
    labels: Sequence[float] | np.ndarray,
    strata: Sequence[Hashable] | None = None,
    shares: Mapping[Hashable, float] | None = None,
    confidence: float = CONFIDENCE,
    items: int = 0,
) -> Calibrated:
    """The judge's ``score`` (a mean over items, with its standard error ``score_error``)
    corrected by the labels: ``score + sum_h W_h mean_h(y - f)``, its variance
    ``score_error^2 + sum_h W_h^2 var_h(y - f) / n_h`` (``shares``: the strata's shares of the
    items the score is a mean of)."""
    f_n = _array(judge_on_labelled, "judge_on_labelled")
    y_n = _array(labels, "labels")
    if f_n.size != y_n.size:
        raise ValueError(f"{f_n.size} judge values for {y_n.size} labels")
    codes, weights = _strata(y_n.size, strata, shares)
    correction, variance = _correction(y_n - f_n, codes, weights)
    value = score + correction
    total = score_error**2 + variance
    return Calibrated(
        value, float(np.sqrt(total)), _interval(value, total, confidence), int(y_n.size), items
    )


def calibrated_mean(
    judged: Sequence[float] | np.ndarray,
    judge_on_labelled: Sequence[float] | np.ndarray,
    labels: Sequence[float] | np.ndarray,
    strata: Sequence[Hashable] | None = None,
    shares: Mapping[Hashable, float] | None = None,
    confidence: float = CONFIDENCE,
) -> Calibrated:
    """The prediction-powered estimate of the people's mean score (see the module's notes):
    ``judged`` the judge's values on every item, ``judge_on_labelled`` and ``labels`` the
    judge's and the people's on the labelled ones; ``strata`` each label's stratum and
    ``shares`` each stratum's share of all items, for a stratified sample."""
    f = _array(judged, "judged")
    error = float(np.sqrt(f.var(ddof=1) / f.size)) if f.size > 1 else 0.0
    return corrected_score(
        float(f.mean()), error, judge_on_labelled, labels, strata, shares, confidence, f.size
    )


def labels_only(
    labels: Sequence[float] | np.ndarray,
    strata: Sequence[Hashable] | None = None,
    shares: Mapping[Hashable, float] | None = None,
    confidence: float = CONFIDENCE,
) -> Calibrated:
    """The people's mean score from their labels alone (stratified as ``calibrated_mean``)."""
    y_n = _array(labels, "labels")
    codes, weights = _strata(y_n.size, strata, shares)
    value, variance = _correction(y_n, codes, weights)
    return Calibrated(
        value, float(np.sqrt(variance)), _interval(value, variance, confidence), y_n.size, 0
    )
