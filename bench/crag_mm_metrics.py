"""Time CRAG-MM scoring: every metric, slice and interval of a run, and a paired comparison.

Generates synthetic graded runs (seeded) with the CRAG-MM label dimensions, then times
``score_turns`` (all blocks, all slices, 95 % bootstrap intervals) for each counting, and
``compare_runs`` between two runs on the same turns. Also times the ordinary bootstrap
(resampling conversation indices) side by side with Podium's multinomial draws on the same
unit values.

    python bench/crag_mm_metrics.py --turns 10000 --repeat 3
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable
from dataclasses import replace
from functools import partial

import numpy as np

from evaluator.benchmarks.crag_mm.compare import compare_runs
from evaluator.benchmarks.crag_mm.metrics import COUNTINGS, count_turns, score_turns
from evaluator.benchmarks.crag_mm.records import GradedTurn, Verdict
from evaluator.stats import DEFAULT_N_BOOT, bootstrap_mean_ci

LABELS = {
    "domain": [f"domain-{n}" for n in range(13)],
    "query_category": [f"category-{n}" for n in range(6)],
    "dynamism": ["static", "slow-changing", "fast-changing", "real-time"],
    "image_quality": ["normal", "blurred", "low light", "occluded", "rotated", "truncated"],
}
VERDICTS = [Verdict.CORRECT, Verdict.HALLUCINATED, Verdict.MISSING]


def synthetic_run(turns: int, multi_turn: bool, seed: int) -> list[GradedTurn]:
    """About ``turns`` graded turns: conversations of 2 to 6 turns, or single turns."""
    rng = random.Random(seed)
    graded: list[GradedTurn] = []
    conversation = 0
    while len(graded) < turns:
        length = rng.randint(2, 6) if multi_turn else 1
        is_ego = rng.random() < 0.7
        for turn_idx in range(length):
            verdict = rng.choices(VERDICTS, weights=[45, 25, 30])[0]
            graded.append(
                GradedTurn(
                    session_id=f"s{conversation:06d}",
                    interaction_id=f"s{conversation:06d}-{turn_idx}",
                    turn_idx=turn_idx,
                    is_ego=is_ego,
                    labels={name: rng.choice(values) for name, values in LABELS.items()},
                    query="q",
                    ground_truth="a",
                    agent_response="r",
                    is_exact_match=verdict is Verdict.CORRECT and rng.random() < 0.2,
                    is_miss=verdict is Verdict.MISSING,
                    verdict=verdict,
                    judge_id="bench",
                    prompt_version="1",
                )
            )
        conversation += 1
    return graded


def regraded(run: list[GradedTurn], seed: int) -> list[GradedTurn]:
    """The same turns with fresh verdicts: a second team's run on the same split."""
    rng = random.Random(seed)
    turns = []
    for turn in run:
        verdict = rng.choices(VERDICTS, weights=[50, 25, 25])[0]
        is_miss = verdict is Verdict.MISSING
        turns.append(replace(turn, verdict=verdict, is_miss=is_miss, is_exact_match=False))
    return turns


def seconds(action: Callable[[], object], repeat: int) -> float:
    """Median wall time of ``repeat`` calls."""
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def index_bootstrap(values: np.ndarray, seed: int, n_boot: int) -> tuple[float, float]:
    """The textbook bootstrap, for comparison: resample unit indices."""
    rng = np.random.default_rng(seed)
    means = values[rng.integers(0, values.size, (n_boot, values.size))].mean(axis=1)
    low, high = np.quantile(means, [0.025, 0.975])
    return float(low), float(high)


def bench(turns: int, multi_turn: bool, n_boot: int, repeat: int) -> None:
    kind = "multi-turn" if multi_turn else "single-turn"
    run_a = synthetic_run(turns, multi_turn, seed=1)
    run_b = regraded(run_a, seed=2)
    scores = score_turns(run_a, n_boot=n_boot)
    blocks = 2 + sum(len(values) for values in scores["slices"].values())
    print(
        f"{kind}: {len(run_a)} turns, {scores['all']['conversations']} conversations, "
        f"{blocks} blocks (all, ego, every slice value), n_boot={n_boot}"
    )
    for counting in COUNTINGS:
        took = seconds(partial(score_turns, run_a, counting, n_boot=n_boot), repeat)
        print(f"  score_turns counting={counting}: {took:.3f} s")
    took = seconds(partial(compare_runs, run_a, run_b, n_boot=n_boot), repeat)
    print(f"  compare_runs (paired bootstrap + 10,000 sign flips): {took:.3f} s")

    counted = count_turns(run_a)
    units = counted.units(np.ones(counted.conversation.size, dtype=bool))
    ours = seconds(partial(bootstrap_mean_ci, units, 0, n_boot), repeat)
    textbook = seconds(partial(index_bootstrap, units, 0, n_boot), repeat)
    print(
        f"  one interval over {units.size} units: multinomial draws {ours * 1000:.1f} ms, "
        f"index resampling {textbook * 1000:.1f} ms ({textbook / ours:.0f}x); "
        f"intervals {bootstrap_mean_ci(units, 0, n_boot)} vs {index_bootstrap(units, 0, n_boot)}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=10000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--n-boot", type=int, default=DEFAULT_N_BOOT)
    args = parser.parse_args()
    for multi_turn in (False, True):
        bench(args.turns, multi_turn, args.n_boot, args.repeat)


if __name__ == "__main__":
    main()
