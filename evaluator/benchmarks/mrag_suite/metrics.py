"""MRAG-Suite scores: per retrieval mode, per slice, and the GPD - GO gap.

Every figure is round(mean x 100, 1) over a mode's answers (``percent``):

- ``settings``: per mode, ``count``, ``unjudged``, ``exact_match``, ``rouge_l`` (rules: never
  withheld), ``accuracy`` (share judged correct; an empty short answer is ``no_answer``, not
  correct) with ``accuracy_ci95`` (percentile bootstrap over the answers), ``no_answer_rate``,
  and every claim metric of ``ragchecker.PROFILE`` (mean over the answers; an answer with no
  response claim counts 0 where it divides by them). While any answer of a mode is unjudged,
  its judged figures are null (withheld, never counted as 0).
- ``gap``: ``gpd_go_gap`` = GPD - GO on accuracy, in points (distractor susceptibility; null
  when either mode is missing or withheld, ``gap_undefined`` says why).
- ``slices``: for every label (``source``, ``variant``, ``ambiguity``), every value, the same
  blocks over that value's answers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from evaluator.benchmarks.mrag_suite.grading import GradedAnswer
from evaluator.benchmarks.mrag_suite.ragchecker import PROFILE
from evaluator.judges.rubric import UNJUDGED
from evaluator.records import EvaluatorError
from evaluator.seam.scoring import UnitSlices
from evaluator.seam.unit_slices import keyed_unit_slices
from evaluator.stats import DEFAULT_N_BOOT, bootstrap_mean_ci, paired_comparison

GAP = "gpd_go_gap"
UNLABELLED = "(unlabelled)"


def _percent(values: Sequence[float]) -> float:
    return round(float(np.mean(values)) * 100, 1) if len(values) else 0.0


def _correct(item: GradedAnswer) -> float:
    return 1.0 if item.grade == "correct" else 0.0


def answer_value(grade: str) -> float:
    """What an answer graded ``grade`` adds to the mean accuracy is (x100)."""
    return 100.0 if grade == "correct" else 0.0


def mode_block(items: Sequence[GradedAnswer], seed: int) -> dict[str, Any]:
    unjudged = sum(item.grade == UNJUDGED for item in items)
    block: dict[str, Any] = {
        "count": len(items),
        "unjudged": unjudged,
        "exact_match": _percent([item.exact_match for item in items]),
        "rouge_l": _percent([item.rouge_l for item in items]),
    }
    judged = ("accuracy", "accuracy_ci95", "no_answer_rate", *PROFILE)
    if unjudged:
        return block | dict.fromkeys(judged)
    correct = np.array([_correct(item) for item in items])
    low, high = bootstrap_mean_ci(correct, seed, DEFAULT_N_BOOT) if len(items) > 1 else (0, 0)
    block |= {
        "accuracy": _percent(list(correct)),
        "accuracy_ci95": [round(low * 100, 1), round(high * 100, 1)]
        if len(items) > 1
        else [_percent(list(correct))] * 2,
        "no_answer_rate": _percent([item.grade == "no_answer" for item in items]),
    }
    return block | {
        name: _percent([item.profile[name] for item in items if item.profile is not None])
        for name in PROFILE
    }


def gap(
    settings: Mapping[str, Mapping[str, Any]],
) -> tuple[dict[str, float | None], dict[str, str]]:
    """``gpd_go_gap`` from the modes' accuracies, and why it is undefined when it is."""
    needed = {mode: (settings.get(mode) or {}).get("accuracy") for mode in ("GPD", "GO")}
    absent = [mode for mode, value in needed.items() if value is None]
    if absent:
        why = f"needs the accuracy of {', '.join(absent)} (not evaluated or unjudged)"
        return {GAP: None}, {GAP: why}
    return {GAP: round(float(needed["GPD"] or 0) - float(needed["GO"] or 0), 1)}, {}


def blocks(items: Sequence[GradedAnswer], seed: int) -> dict[str, Any]:
    by_mode: dict[str, list[GradedAnswer]] = {}
    for item in items:
        by_mode.setdefault(item.mode, []).append(item)
    settings = {mode: mode_block(group, seed) for mode, group in by_mode.items()}
    values, undefined = gap(settings)
    return {"settings": settings, "gap": values, "gap_undefined": undefined}


def score_answers(graded: Sequence[GradedAnswer], seed: int = 0) -> dict[str, Any]:
    if not graded:
        raise EvaluatorError("nothing to score: no (mode, item) was graded")
    slices: dict[str, dict[str, Any]] = {}
    for label in sorted({name for item in graded for name in item.labels}):
        values = sorted({item.labels.get(label, UNLABELLED) for item in graded})
        slices[label] = {
            value: blocks([i for i in graded if i.labels.get(label, UNLABELLED) == value], seed)
            for value in values
        }
    unjudged = sum(item.grade == UNJUDGED for item in graded)
    head = {"complete": unjudged == 0, "unjudged": unjudged}
    return head | blocks(graded, seed) | {"slices": slices}


def answer_units(run: Sequence[GradedAnswer]) -> dict[tuple[str, str], float] | None:
    """Each (mode, item) answer's accuracy (x100) in the run; None with unjudged answers."""
    if any(item.grade == UNJUDGED for item in run):
        return None
    return {(item.mode, item.item_id): answer_value(item.grade) for item in run}


def answer_unit_slices(run: Sequence[GradedAnswer]) -> UnitSlices:
    """Each (mode, item) answer's labels (``source``, ``variant``, ...; ``(unlabelled)`` where
    it has none, as ``score_answers`` counts it), in the units' order (by (mode, item id));
    none with unjudged answers (no units)."""
    if not answer_units(run):
        return {}
    return keyed_unit_slices({(item.mode, item.item_id): item.labels for item in run}, UNLABELLED)


def compare_answers(
    a: Sequence[GradedAnswer], b: Sequence[GradedAnswer], seed: int = 0
) -> dict[str, Any]:
    """Accuracy (x100) of two runs over the same (mode, item) answers, paired."""
    runs: dict[str, dict[tuple[str, str], float]] = {}
    for name, run in (("A", a), ("B", b)):
        units = answer_units(run)
        if units is None:
            raise EvaluatorError(f"run {name} has unjudged answers; judge them first")
        runs[name] = units
    keys = sorted(runs["A"])
    if keys != sorted(runs["B"]) or len(keys) < 2:
        raise EvaluatorError("the runs must cover the same two or more (mode, item) answers")
    scores_a = np.array([runs["A"][k] for k in keys])
    scores_b = np.array([runs["B"][k] for k in keys])
    paired = paired_comparison(scores_a, scores_b, seed)
    return paired.result("accuracy", float(scores_a.mean()), float(scores_b.mean()), seed)
