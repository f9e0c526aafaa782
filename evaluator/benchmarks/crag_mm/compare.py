"""Paired comparison of two runs on the same split: can the leaderboard tell them apart?

Both runs are scored with the same counting. The difference is truthfulness(a) -
truthfulness(b); its 95 % interval is a seeded percentile bootstrap over the conversations,
resampling each conversation's pair of values together, and the p-value comes from a seeded
sign-flip permutation test on the same per-conversation differences (see
:mod:`evaluator.stats`). The runs are *separable* when the interval excludes 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from evaluator.benchmarks.crag_mm.metrics import (
    CountedTurns,
    check_resampling,
    count_turns,
    slice_values,
)
from evaluator.benchmarks.crag_mm.records import GradedTurn
from evaluator.records import EvaluatorError
from evaluator.stats import DEFAULT_N_BOOT, paired_comparison

_EXAMPLES = 5


def _turn_keys(counted: CountedTurns) -> set[tuple[str, str, int]]:
    rows = zip(counted.conversation, counted.interaction_ids, counted.turn_idx, strict=True)
    return {(counted.session_ids[c], interaction, int(idx)) for c, interaction, idx in rows}


def _check_same_turns(a: CountedTurns, b: CountedTurns) -> None:
    a_keys, b_keys = _turn_keys(a), _turn_keys(b)
    if a_keys == b_keys:
        return
    problems = []
    for name, extra in (("A", a_keys - b_keys), ("B", b_keys - a_keys)):
        if extra:
            shown = ", ".join(f"{s}/{i} (turn {t})" for s, i, t in sorted(extra)[:_EXAMPLES])
            problems.append(f"{len(extra)} turn(s) only in run {name} (e.g. {shown})")
    raise EvaluatorError(
        "the two runs do not cover the same conversations and turns: " + "; ".join(problems)
    )


def run_units(graded: Sequence[GradedTurn], counting: str = "paper") -> np.ndarray | None:
    """The run's truthfulness units (one per conversation, in the split's order) that
    ``compare_runs`` pairs; None when it has unjudged turns or no turn."""
    if not graded:
        return None
    counted = count_turns(graded, counting)
    if not counted.complete:
        return None
    return counted.units(np.ones(counted.conversation.size, dtype=bool))


def run_unit_slices(
    graded: Sequence[GradedTurn], counting: str = "paper"
) -> dict[str, list[str | None]]:
    """Per slice dimension, each of ``run_units``' units' value (a conversation's, when all its
    turns share it; else None: the ``turn`` dimension of a multi-turn split, or a label that
    changes within a conversation)."""
    if not graded:
        return {}
    counted = count_turns(graded, counting)
    if not counted.complete:  # no units either (``run_units``)
        return {}
    conversations = len(counted.session_ids)
    found: dict[str, list[str | None]] = {}
    for name, values in slice_values(counted).items():
        distinct, codes = np.unique(values, return_inverse=True)
        low = np.full(conversations, len(distinct), dtype=np.int64)
        high = np.full(conversations, -1, dtype=np.int64)
        np.minimum.at(low, counted.conversation, codes)
        np.maximum.at(high, counted.conversation, codes)
        found[name] = [
            str(distinct[lo]) if lo == hi else None for lo, hi in zip(low, high, strict=True)
        ]
    return found


def compare_runs(
    a: Sequence[GradedTurn],
    b: Sequence[GradedTurn],
    counting: str = "paper",
    seed: int = 0,
    n_boot: int = DEFAULT_N_BOOT,
) -> dict[str, Any]:
    """Truthfulness difference (a - b) with its paired 95 % interval and p-value.

    Raises :class:`EvaluatorError` when the runs cover different turns, when either run has
    unjudged turns (its truthfulness is not known yet), or with fewer than two conversations.
    """
    check_resampling(seed, n_boot)
    counted = {}
    for name, run in (("A", a), ("B", b)):
        try:
            counted[name] = count_turns(run, counting)
        except EvaluatorError as error:
            raise EvaluatorError(f"run {name}: {error}") from None
    run_a, run_b = counted["A"], counted["B"]
    _check_same_turns(run_a, run_b)
    for name, turns in counted.items():
        if not turns.complete:
            raise EvaluatorError(
                f"run {name} has {int(turns.unjudged.sum())} unjudged turn(s); judge them "
                "before comparing"
            )
    if len(run_a.session_ids) < 2:
        raise EvaluatorError("a paired comparison needs at least two conversations")
    everything = np.ones(run_a.conversation.size, dtype=bool)
    truthfulness_a = run_a.truthfulness(everything)
    truthfulness_b = run_b.truthfulness(everything)
    paired = paired_comparison(run_a.units(everything), run_b.units(everything), seed, n_boot)
    return {
        "metric": "truthfulness",
        "a": truthfulness_a,
        "b": truthfulness_b,
        "counting": counting,
        "multi_turn": run_a.multi_turn,
        "conversations": len(run_a.session_ids),
        "turns": int(run_a.conversation.size),
        "truthfulness_a": truthfulness_a,
        "truthfulness_b": truthfulness_b,
        "difference": truthfulness_a - truthfulness_b,
        "difference_ci95": list(paired.ci95),
        "p_value": paired.p_value,
        "separable": paired.separable,
        "seed": seed,
        "n_boot": n_boot,
    }


def format_comparison(result: dict[str, Any], a_name: str = "A", b_name: str = "B") -> str:
    """A few readable lines for a :func:`compare_runs` result."""
    low, high = result["difference_ci95"]
    kind = "multi-turn" if result["multi_turn"] else "single-turn"
    verdict = (
        f"separable: {a_name if result['difference'] > 0 else b_name} is more truthful"
        if result["separable"]
        else "not separable at the 95% level"
    )
    return "\n".join(
        [
            f"Truthfulness ({result['counting']} counting, {kind}, "
            f"{result['conversations']} conversations, {result['turns']} turns)",
            f"  {a_name}: {result['truthfulness_a']:+.4f}",
            f"  {b_name}: {result['truthfulness_b']:+.4f}",
            f"  difference {a_name} - {b_name}: {result['difference']:+.4f} "
            f"(95% CI [{low:+.4f}, {high:+.4f}], paired bootstrap over conversations)",
            f"  paired sign-flip test: p = {result['p_value']:.4f}",
            f"  {verdict}",
        ]
    )
