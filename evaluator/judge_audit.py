"""Auditing a judge against people's labels: the sample, and how far the judge agrees.

Sampling (``allocate``, ``draw``): the judged items are split into strata (the judge's verdict,
and the value of one slice dimension); a sample of ``total`` items is shared out in proportion
to the strata's sizes (largest remainders), every stratum getting at least one item while the
sample has room for one of each, so rare verdicts are seen while the sample's mix stays the
split's. Within a stratum items are drawn without replacement; the sample is then shuffled as
a whole, so the order labellers see says nothing of the judge's verdict.

Agreement (``agreement``): the judge's verdicts against the people's labels on the same items,
one class each (the benchmark's verdict menu). Figures, each ``{"value", "ci95", "n"}`` (``n``:
the count behind it; ``value`` None when the count is 0 or the figure undefined):

- ``agreement``: the share of items where the judge gave the people's label (Wilson interval);
- ``kappa``: Cohen's kappa, (p_o - p_e) / (1 - p_e) with p_e from the two sides' class shares
  (undefined when both sides use one class only); percentile bootstrap interval;
- per class: ``precision`` (of the items the judge gave that class, the share people did too),
  ``recall`` (of the items people gave that class, the share the judge did too), both with
  Wilson intervals, and ``f1`` with a bootstrap interval.

The bootstrap resamples items: a resampled confusion matrix is a multinomial draw on the
observed cells' shares (exactly the ordinary bootstrap, as ``evaluator.stats`` does for means),
``n_boot`` matrices at once. Intervals are 95 %, seeded, so a report is reproducible.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Any, TypeVar

import numpy as np
from scipy.stats import binomtest

from evaluator.stats import CONFIDENCE, DEFAULT_N_BOOT

K = TypeVar("K", bound=Hashable)
T = TypeVar("T")


def allocate(sizes: Mapping[K, int], total: int) -> dict[K, int]:
    """How many items each stratum gives to a sample of ``total`` (see the module's notes)."""
    if total < 1:
        raise ValueError(f"a sample needs at least 1 item, not {total}")
    if any(size < 0 for size in sizes.values()):
        raise ValueError("a stratum cannot have fewer than 0 items")
    filled = {key: size for key, size in sizes.items() if size > 0}
    if total >= sum(filled.values()):
        return dict(filled)
    by_size = sorted(filled, key=lambda key: (-filled[key], str(key)))
    if total <= len(filled):  # one each for the largest strata
        return {key: 1 for key in by_size[:total]}
    shares = {key: 1 for key in filled}
    left = total - len(filled)
    rest = sum(size - 1 for size in filled.values())
    quotas = {key: left * (filled[key] - 1) / rest for key in filled}
    for key, quota in quotas.items():
        shares[key] += int(quota)
    short = total - sum(shares.values())
    ahead = sorted(filled, key=lambda key: (-(quotas[key] - int(quotas[key])), str(key)))
    for key in ahead[:short]:
        shares[key] += 1
    return shares


def draw(strata: Mapping[K, Sequence[T]], total: int, seed: int = 0) -> list[tuple[K, T]]:
    """A stratified sample of ``total`` items (``allocate``), each with its stratum, in an
    order shuffled across strata."""
    shares = allocate({key: len(items) for key, items in strata.items()}, total)
    rng = np.random.default_rng(seed)
    chosen: list[tuple[K, T]] = []
    for key in sorted(shares, key=str):
        items = strata[key]
        picked = rng.choice(len(items), size=shares[key], replace=False)
        chosen += [(key, items[int(index)]) for index in sorted(picked)]
    order = rng.permutation(len(chosen))
    return [chosen[int(index)] for index in order]


def figure(value: float | None, ci95: tuple[float, float] | None, n: int) -> dict[str, Any]:
    return {"value": value, "ci95": list(ci95) if ci95 is not None else None, "n": n}


def proportion(hits: int, n: int) -> dict[str, Any]:
    """``hits`` of ``n`` with its Wilson interval (scipy)."""
    if n == 0:
        return figure(None, None, 0)
    ci = binomtest(hits, n).proportion_ci(CONFIDENCE, method="wilson")
    return figure(hits / n, (float(ci.low), float(ci.high)), n)


def confusion(judge: Sequence[str], people: Sequence[str], classes: Sequence[str]) -> np.ndarray:
    """The confusion matrix: rows the people's label, columns the judge's verdict."""
    if len(judge) != len(people):
        raise ValueError(f"{len(judge)} verdicts against {len(people)} labels")
    index = {name: n for n, name in enumerate(classes)}
    matrix = np.zeros((len(classes), len(classes)), dtype=np.int64)
    for said, labelled in zip(judge, people, strict=True):
        for name in (said, labelled):
            if name not in index:
                raise ValueError(f"{name!r} is not one of the classes {', '.join(classes)}")
        matrix[index[labelled], index[said]] += 1
    return matrix


def kappa(matrices: np.ndarray) -> np.ndarray:
    """Cohen's kappa of each confusion matrix (the last two axes); NaN where undefined."""
    counts = matrices.astype(np.float64)
    n = counts.sum(axis=(-2, -1))
    with np.errstate(invalid="ignore", divide="ignore"):
        observed = np.trace(counts, axis1=-2, axis2=-1) / n
        expected = (counts.sum(axis=-1) * counts.sum(axis=-2)).sum(axis=-1) / n**2
        value = (observed - expected) / (1.0 - expected)
    return np.where(np.isclose(expected, 1.0) | (n == 0), np.nan, value)


def f1(matrices: np.ndarray) -> np.ndarray:
    """Per class F1 of the judge (last axis: classes); NaN where neither side used a class."""
    counts = matrices.astype(np.float64)
    hits = np.diagonal(counts, axis1=-2, axis2=-1)
    both = counts.sum(axis=-2) + counts.sum(axis=-1)  # judged c + labelled c
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(both > 0, 2 * hits / both, np.nan)


def _bootstrap(matrix: np.ndarray, seed: int, n_boot: int) -> np.ndarray:
    n = int(matrix.sum())
    rng = np.random.default_rng(seed)
    draws = rng.multinomial(n, matrix.ravel() / n, size=n_boot)
    return draws.reshape(n_boot, *matrix.shape)


def _interval(values: np.ndarray) -> tuple[float, float] | None:
    kept = values[~np.isnan(values)]
    if kept.size == 0:
        return None
    tail = (1.0 - CONFIDENCE) / 2.0
    low, high = np.quantile(kept, [tail, 1.0 - tail])
    return float(low), float(high)


def _number(value: Any) -> float | None:
    return None if np.isnan(value) else float(value)


def agreement(
    judge: Sequence[str],
    people: Sequence[str],
    classes: Sequence[str],
    seed: int = 0,
    n_boot: int = DEFAULT_N_BOOT,
) -> dict[str, Any]:
    """How far ``judge`` agrees with ``people`` on the same items (see the module's notes):
    ``{"n", "agreement", "kappa", "classes": {name: {"precision", "recall", "f1"}},
    "confusion": {"rows": "people", "columns": "judge", "classes", "counts"}}``."""
    matrix = confusion(judge, people, classes)
    n = int(matrix.sum())
    hits = np.diagonal(matrix)
    judged, labelled = matrix.sum(axis=0), matrix.sum(axis=1)
    draws = _bootstrap(matrix, seed, n_boot) if n else np.zeros((0, *matrix.shape), np.int64)
    kappas, f1s = kappa(draws), f1(draws)
    per_class = {}
    for c, name in enumerate(classes):
        used = int(judged[c] + labelled[c] - hits[c])  # items either side gave this class
        per_class[name] = {
            "precision": proportion(int(hits[c]), int(judged[c])),
            "recall": proportion(int(hits[c]), int(labelled[c])),
            "f1": figure(_number(f1(matrix)[c]), _interval(f1s[:, c]), used),
        }
    return {
        "n": n,
        "agreement": proportion(int(hits.sum()), n),
        "kappa": figure(_number(kappa(matrix)), _interval(kappas), n),
        "classes": per_class,
        "confusion": {
            "rows": "people",
            "columns": "judge",
            "classes": list(classes),
            "counts": matrix.tolist(),
        },
    }
