"""The toy's scores: accuracy (with a bootstrap interval over questions) and the rate of "I
don't know", over all questions and per region; withheld (None) while a question is
unjudged."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from evaluator.judges.rubric import UNJUDGED
from evaluator.records import EvaluatorError
from evaluator.stats import bootstrap_mean_ci, paired_comparison

from .items import GradedQuestion
from .judging import CORRECT, IDK


def block(items: Sequence[GradedQuestion], seed: int) -> dict[str, Any]:
    result: dict[str, Any] = {"count": len(items)}
    if not items or any(item.grade == UNJUDGED for item in items):
        return result | {"accuracy": None, "accuracy_ci95": None, "idk_rate": None}
    right = [float(item.grade == CORRECT) for item in items]
    return result | {
        "accuracy": sum(right) / len(right),
        "accuracy_ci95": list(bootstrap_mean_ci(right, seed=seed)),
        "idk_rate": sum(item.grade == IDK for item in items) / len(items),
    }


def aggregate(graded: Sequence[GradedQuestion], seed: int) -> dict[str, Any]:
    unjudged = sum(item.grade == UNJUDGED for item in graded)
    regions = sorted({item.region for item in graded})
    return {
        "complete": unjudged == 0,
        "unjudged": unjudged,
        "all": block(graded, seed),
        "slices": {
            "region": {
                region: block([item for item in graded if item.region == region], seed)
                for region in regions
            }
        },
    }


def paired(a: Sequence[GradedQuestion], b: Sequence[GradedQuestion], seed: int) -> dict[str, Any]:
    runs = []
    for name, run in (("A", a), ("B", b)):
        if any(item.grade == UNJUDGED for item in run):
            raise EvaluatorError(f"run {name} has unjudged questions; judge them first")
        runs.append({item.id: float(item.grade == CORRECT) for item in run})
    if runs[0].keys() != runs[1].keys() or len(runs[0]) < 2:
        raise EvaluatorError("the two runs do not answer the same questions (two at least)")
    keys = sorted(runs[0])
    right_a, right_b = [runs[0][k] for k in keys], [runs[1][k] for k in keys]
    result = paired_comparison(right_a, right_b, seed)
    return result.result("accuracy", sum(right_a) / len(keys), sum(right_b) / len(keys), seed)
