"""Visual-RAG scores: retrieval metrics, per-setting answer metrics, gCUE, slices, intervals.

Every rate and mean is x100 except ``hit_count@k`` (a mean count) and gCUE (a plain ratio).

- ``retrieval`` (from the ``retrieval`` setting's rankings; null when it is not evaluated):
  ``recall@k``, ``ndcg@k``, ``hit@k``, ``hit_count@k`` for k in 1, 5, 10, 20, 30 (means over
  the queries), ``recall@k_ci95`` (percentile bootstrap over the queries), ``count``.
- ``settings``: per setting, ``accuracy`` (mean judge score, 0 / 0.5 / 1), ``accuracy_ci95``,
  ``idk_rate`` (share marked no answer; an empty answer counts), ``rouge1_recall``, ``count``,
  ``unjudged``. While any item of a setting is unjudged, its accuracy, interval and IDK rate
  are null (never counted as 0); ROUGE needs no judge.
- ``gcue``: ``gcue@k`` for every ``one_in_<k>`` setting: (A_k - B) / (A_GT - B) with
  B = lambda x A_zero_shot + (1 - lambda) x A_non_clue (accuracies), null when it is undefined
  (A_GT = B, or an accuracy it needs is missing or withheld), with the reason in
  ``gcue_undefined``. It changes sign when A_GT < B.
- ``slices``: for every label (``species`` and the split's extra labels), every value, the
  same three blocks over that value's queries.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from evaluator.benchmarks.visual_rag.grading import RETRIEVAL_METRICS, GradedQuery
from evaluator.benchmarks.visual_rag.judging import NO_ANSWER, grade_score
from evaluator.judges.rubric import UNJUDGED
from evaluator.records import EvaluatorError
from evaluator.seam.scoring import UnitSlices
from evaluator.seam.unit_slices import keyed_unit_slices
from evaluator.stats import DEFAULT_N_BOOT, bootstrap_mean_ci, paired_comparison

_ONE_IN = re.compile(r"one_in_(\d+)")
UNLABELLED = "(unlabelled)"  # the slice value of a query without the label


def _percent(values: np.ndarray) -> float:
    return float(values.mean() * 100)


def _ci(values: np.ndarray, seed: int) -> list[float]:
    if values.size < 2:
        return [_percent(values)] * 2
    low, high = bootstrap_mean_ci(values, seed, DEFAULT_N_BOOT)
    return [low * 100, high * 100]


def retrieval_block(items: Sequence[GradedQuery], seed: int) -> dict[str, Any] | None:
    ranked = [item.retrieval for item in items if item.retrieval is not None]
    if not ranked:
        return None
    block: dict[str, Any] = {"count": len(ranked)}
    for name in RETRIEVAL_METRICS:
        values = np.array([scores[name] for scores in ranked])
        counted = name.startswith("hit_count")
        block[name] = float(values.mean()) if counted else _percent(values)
        if name.startswith("recall@"):
            block[f"{name}_ci95"] = _ci(values, seed)
    return block


def setting_block(items: Sequence[GradedQuery], seed: int) -> dict[str, Any]:
    unjudged = sum(item.grade == UNJUDGED for item in items)
    block: dict[str, Any] = {
        "count": len(items),
        "unjudged": unjudged,
        "rouge1_recall": _percent(np.array([item.rouge1_recall for item in items])),
        "accuracy": None,
        "accuracy_ci95": None,
        "idk_rate": None,
    }
    if unjudged == 0:
        scores = np.array([grade_score(item.grade) for item in items])
        block["accuracy"] = _percent(scores)
        block["accuracy_ci95"] = _ci(scores, seed)
        block["idk_rate"] = _percent(np.array([item.grade == NO_ANSWER for item in items]))
    return block


def gcue(
    settings: Mapping[str, Mapping[str, Any]], lam: float
) -> tuple[dict[str, float | None], dict[str, str]]:
    """gCUE for every ``one_in_<k>`` setting, and why each undefined one is undefined."""
    values: dict[str, float | None] = {}
    undefined: dict[str, str] = {}
    ones = sorted((int(m.group(1)), s) for s in settings if (m := _ONE_IN.fullmatch(s)))
    for k, setting in ones:
        name = f"gcue@{k}"
        values[name] = None
        needed = {
            s: (settings.get(s) or {}).get("accuracy")
            for s in ("gt_clue", "zero_shot", "non_clue", setting)
        }
        absent = [s for s, accuracy in needed.items() if accuracy is None]
        if absent:
            undefined[name] = (
                f"needs the accuracy of {', '.join(absent)} (not evaluated or unjudged)"
            )
            continue
        accuracy = {s: float(value) for s, value in needed.items() if value is not None}
        baseline = lam * accuracy["zero_shot"] + (1 - lam) * accuracy["non_clue"]
        if accuracy["gt_clue"] == baseline:
            undefined[name] = "undefined: the GT-clue accuracy equals the baseline B"
            continue
        values[name] = (accuracy[setting] - baseline) / (accuracy["gt_clue"] - baseline)
    return values, undefined


def blocks(items: Sequence[GradedQuery], lam: float, seed: int) -> dict[str, Any]:
    by_setting: dict[str, list[GradedQuery]] = {}
    for item in items:
        by_setting.setdefault(item.setting, []).append(item)
    settings = {name: setting_block(group, seed) for name, group in by_setting.items()}
    values, undefined = gcue(settings, lam)
    return {
        "retrieval": retrieval_block(items, seed),
        "settings": settings,
        "gcue": values,
        "gcue_undefined": undefined,
    }


def score_queries(graded: Sequence[GradedQuery], lam: float, seed: int = 0) -> dict[str, Any]:
    """The scores document's body: completeness, the blocks, and every slice's blocks."""
    if not graded:
        raise EvaluatorError("nothing to score: no (setting, query) was graded")
    slices: dict[str, dict[str, Any]] = {}
    for label in sorted({name for item in graded for name in item.labels}):
        values = sorted({item.labels.get(label, UNLABELLED) for item in graded})
        slices[label] = {
            value: blocks(
                [item for item in graded if item.labels.get(label, UNLABELLED) == value],
                lam,
                seed,
            )
            for value in values
        }
    unjudged = sum(item.grade == UNJUDGED for item in graded)
    return (
        {"complete": unjudged == 0, "unjudged": unjudged}
        | blocks(graded, lam, seed)
        | {"slices": slices}
    )


def query_units(run: Sequence[GradedQuery]) -> dict[tuple[str, str], float] | None:
    """Each (setting, query) item's accuracy (x100) in the run; None with unjudged items."""
    if any(item.grade == UNJUDGED for item in run):
        return None
    return {(item.setting, item.query_id): grade_score(item.grade) * 100 for item in run}


def query_unit_slices(run: Sequence[GradedQuery]) -> UnitSlices:
    """Each (setting, query) item's labels (``species`` and the split's own; ``(unlabelled)``
    where it has none, as ``score_queries`` counts it), in the units' order (by (setting,
    query id)); none with unjudged items (no units)."""
    if not query_units(run):
        return {}
    return keyed_unit_slices(
        {(item.setting, item.query_id): item.labels for item in run}, UNLABELLED
    )


def compare_queries(
    a: Sequence[GradedQuery], b: Sequence[GradedQuery], seed: int = 0
) -> dict[str, Any]:
    """Accuracy difference (a - b, x100) over paired (setting, query) items: bootstrap
    interval and sign-flip p-value (``evaluator.stats``)."""
    runs = {}
    for name, run in (("A", a), ("B", b)):
        units = query_units(run)
        if units is None:
            unjudged = sum(item.grade == UNJUDGED for item in run)
            raise EvaluatorError(f"run {name} has {unjudged} unjudged item(s); judge them first")
        runs[name] = units
    if runs["A"].keys() != runs["B"].keys():
        only = sorted(runs["A"].keys() ^ runs["B"].keys())[:5]
        raise EvaluatorError(f"the two runs do not cover the same (setting, query) items: {only}")
    if len(runs["A"]) < 2:
        raise EvaluatorError("a paired comparison needs at least two items")
    keys = sorted(runs["A"])
    scores_a = np.array([runs["A"][key] for key in keys])
    scores_b = np.array([runs["B"][key] for key in keys])
    paired = paired_comparison(scores_a, scores_b, seed)
    return paired.result("accuracy", float(scores_a.mean()), float(scores_b.mean()), seed)
