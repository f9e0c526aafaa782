"""MRAG-Suite's printouts: a scores document's headline per mode, and a paired comparison."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from evaluator.benchmarks.mrag_suite.grading import GradedAnswer
from evaluator.benchmarks.mrag_suite.modes import COUNTINGS
from evaluator.notices import judge_notices

SHOWN = ("accuracy", "exact_match", "rouge_l", "precision", "recall", "f1", "faithfulness",
         "hallucination", "claim_recall", "context_precision")  # fmt: skip
SHORT = {"exact_match": "em", "accuracy": "acc", "precision": "prec", "faithfulness": "faith",
         "hallucination": "halluc", "claim_recall": "cl_rec", "context_precision": "ctx_prec",
         "rouge_l": "rougeL", "recall": "rec"}  # fmt: skip


def _cell(value: Any) -> str:
    return "-" if value is None else f"{value:.1f}"


def summary_text(document: Mapping[str, Any], graded: Sequence[GradedAnswer]) -> str:
    judge = document["judge"]
    head = " ".join(f"{SHORT.get(name, name):>8}" for name in SHOWN)
    lines = [
        f"protocol mrag-suite  judge {judge['id']} ({judge['kind']}, prompt "
        f"{judge['prompt_version']})  depth {document.get('depth')}  counting "
        f"{document.get('counting', COUNTINGS[0])}",
        "",
        f"{'mode':<5} {'count':>6} {head}",
    ]
    for mode, block in document["settings"].items():
        cells = " ".join(f"{_cell(block[name]):>8}" for name in SHOWN)
        lines.append(f"{mode:<5} {block['count']:>6} {cells}")
    for name, value in document["gap"].items():
        reason = document["gap_undefined"].get(name, "")
        lines.append(f"{name}: {_cell(value)} points {reason}".rstrip())
    calls = document.get("judge_calls") or {}
    if calls:
        lines.append(
            f"judge calls: {calls['requested']} requested ({calls['predicted']} predicted at "
            f"most), {calls['requested'] / max(1, len(graded)):.1f} per answer"
        )
    notices = judge_notices(document, (item.judge_error for item in graded), "answers",
                            "the judged figures")  # fmt: skip
    return "\n".join([*lines, "", *counting_notices(document), *notices]).rstrip() + "\n"


def counting_notices(document: Mapping[str, Any]) -> list[str]:
    """A notice when the scores were not counted as RAGChecker counts (``modes.COUNTINGS``)."""
    counting = document.get("counting", COUNTINGS[0])
    if counting == COUNTINGS[0]:
        return []
    return [
        f"NOTICE: counted {counting} (Podium's reading): the same content retrieved once, "
        "each (claim, text) pair checked once; RAGChecker counts an item retrieved twice "
        "and a claim extracted twice twice: compare only runs counted the same way."
    ]


def comparison_text(result: Mapping[str, Any], a_name: str, b_name: str) -> str:
    low, high = result["difference_ci95"]
    better = a_name if result["difference"] > 0 else b_name
    verdict = f"{better} is more accurate" if result["separable"] else "not separable (95%)"
    return (
        f"accuracy over {result['items']} (mode, item) answers: {a_name} {result['a']:.1f}, "
        f"{b_name} {result['b']:.1f}\n"
        f"difference {result['difference']:+.1f} points, 95% CI [{low:+.1f}, {high:+.1f}] "
        f"(paired bootstrap), sign-flip p = {result['p_value']:.4f}: {verdict}\n"
    )
