"""Aggregating M2RAG: the eight metrics, overall, per topic, with an interval on overall.

The answer metrics (fluency, relevance, context precision, faithfulness, image recall) are
means over answers; the per-image ones (coherence, helpfulness, reference) are pooled over every
placed image of every answer (an answer with no image adds nothing there); overall is the mean
of the eight. Podium's headline counts a failed or empty answer as 0 in the answer metrics;
``skip`` is the official figure, computed over the answers that did not fail. Every figure is
None while an answer is unjudged. The interval on overall: a seeded bootstrap over answers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from evaluator.benchmarks.m2rag.record import ANSWER_METRICS, FAILED, IMAGE_METRICS, GradedAnswer
from evaluator.records import EvaluatorError
from evaluator.seam.scoring import UnitSlices
from evaluator.seam.unit_slices import item_unit_slices
from evaluator.stats import DEFAULT_N_BOOT, paired_comparison

METRICS = (*ANSWER_METRICS, *IMAGE_METRICS)


def _arrays(items: Sequence[GradedAnswer]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per answer: the five answer scores, the three per-image sums, the image count."""
    answers = np.array([[item.answer_scores()[n] for n in ANSWER_METRICS] for item in items])
    sums = np.array([[sum(getattr(item, n)) for n in IMAGE_METRICS] for item in items])
    counts = np.array([len(item.placed) for item in items], dtype=np.float64)
    return answers.reshape(-1, 5), sums.reshape(-1, 3), counts


def _figures(answers: np.ndarray, sums: np.ndarray, counts: np.ndarray) -> dict[str, float]:
    """The eight metrics and overall (a pooled metric with no image at all is 0)."""
    means = answers.mean(axis=0) if len(answers) else np.zeros(5)
    pooled = sums.sum(axis=0) / counts.sum() if counts.sum() else np.zeros(3)
    values = dict(zip(METRICS, map(float, [*means, *pooled]), strict=True))
    return values | {"overall": float(np.mean(list(values.values())))}


def overall_ci(
    items: Sequence[GradedAnswer], seed: int, n_boot: int = DEFAULT_N_BOOT
) -> list[float]:
    """A percentile bootstrap over answers of overall (pooling redone in each resample)."""
    answers, sums, counts = _arrays(items)
    if len(items) < 2:
        value = _figures(answers, sums, counts)["overall"]
        return [value, value]
    weights = (
        np.random.default_rng(seed)
        .multinomial(len(items), np.full(len(items), 1 / len(items)), size=n_boot)
        .astype(np.float64)
    )
    means = weights @ answers / len(items)
    image_counts = weights @ counts
    pooled = np.divide(weights @ sums, image_counts[:, None], out=np.zeros((n_boot, 3)),
                       where=image_counts[:, None] > 0)  # fmt: skip
    overall = np.concatenate([means, pooled], axis=1).mean(axis=1)
    low, high = np.quantile(overall, [0.025, 0.975])
    return [float(low), float(high)]


def block(items: Sequence[GradedAnswer], seed: int) -> dict[str, Any]:
    """One block: count, failed, unjudged, the headline figures, ``overall_ci95``, ``skip``."""
    unjudged = sum(not item.judged and item.grade != FAILED for item in items)
    failed = sum(item.grade == FAILED for item in items)
    result: dict[str, Any] = {"count": len(items), "failed": failed, "unjudged": unjudged,
                              "images": sum(len(item.placed) for item in items)}  # fmt: skip
    if unjudged or not items:
        return result | dict.fromkeys((*METRICS, "overall"), None) | {
            "overall_ci95": None, "skip": None}  # fmt: skip
    result |= _figures(*_arrays(items))
    result["overall_ci95"] = overall_ci(items, seed)
    kept = [item for item in items if item.grade != FAILED]
    result["skip"] = _figures(*_arrays(kept)) if kept else None
    return result


def score_answers(graded: Sequence[GradedAnswer], seed: int = 0) -> dict[str, Any]:
    unjudged = sum(item.grade not in (FAILED,) and not item.judged for item in graded)
    slices: dict[str, dict[str, Any]] = {}
    for name in sorted({label for item in graded for label in item.labels}):
        values = sorted({item.labels[name] for item in graded if name in item.labels})
        slices[name] = {
            value: block([item for item in graded if item.labels.get(name) == value], seed)
            for value in values
        }
    return {"complete": unjudged == 0, "unjudged": unjudged, "all": block(graded, seed),
            "slices": slices}  # fmt: skip


def answer_units(run: Sequence[GradedAnswer]) -> np.ndarray | None:
    """Each answer's own overall (a failed answer 0), in the run's order; None with unjudged
    answers."""
    if not run or any(item.grade not in (FAILED,) and not item.judged for item in run):
        return None
    return np.array([0.0 if item.grade == FAILED else float(item.grade) for item in run])


def answer_unit_slices(run: Sequence[GradedAnswer]) -> UnitSlices:
    """Each of ``answer_units``' answers' labels (its topic), in the run's order; a label some
    answer lacks is no dimension (the scores put that answer in no value); none with unjudged
    answers (no units)."""
    if answer_units(run) is None:
        return {}
    return item_unit_slices([item.labels for item in run], None)


def compare_answers(
    a: Sequence[GradedAnswer], b: Sequence[GradedAnswer], seed: int = 0
) -> dict[str, Any]:
    """Paired on each answer's own overall (a failed answer 0), over the same queries."""
    if [item.query_id for item in a] != [item.query_id for item in b]:
        raise EvaluatorError("the two runs answer different queries")
    xs, ys = answer_units(a), answer_units(b)
    if xs is None or ys is None:
        raise EvaluatorError("a run has unjudged answers: judge them before comparing")
    result = paired_comparison(xs, ys, seed=seed)
    return {"metric": "overall", "a": float(xs.mean()), "b": float(ys.mean()),
            "difference": result.difference, "difference_ci95": list(result.ci95),
            "p_value": result.p_value, "separable": result.separable, "items": len(a)}  # fmt: skip
