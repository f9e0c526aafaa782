"""Repeated runs' statistics measured (``evaluator.repeats``, ``leaderboard.repeats``): their
arithmetic, and a results change of a board whose every entry was run k times.

Usage:
    python bench/repeats.py cost [--entries 1000] [--units 10000] [--k 3] [--repeats 3]
    python bench/repeats.py rebuild --database boards_bench [--units 10000] [--k 3] [--repeats 3]

``cost``: ``evaluator.repeats.repeat_statistics`` (mean, interval, between-run sd, pass^k) on a
board of ``--entries`` entries run ``--k`` times each on ``--units`` units (values in {-1, 0,
1}), decoding their stored units first, as ``leaderboard.repeats.beside`` does (float32 bytes,
``entries x k`` of them).
``rebuild``: in a database seeded by ``bench/seed_leaderboard.py``, gives the multi-turn board's
runs ``--units`` units (``board_stats._board_split``), then trials 1 to k - 1 of every ranked
entry (done, their units a redraw of a fifth of the entry's), and times
``board_store.results_changed`` of that split (``bench/board_stats.py rebuild`` times it
without repeats).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from board_stats import GRADES, _board_split, _database

from evaluator.repeats import repeat_statistics


def repeated(entries: int, units: int, k: int, repeats: int) -> None:
    rng = np.random.default_rng(0)
    unit = np.dtype("<f4")  # as RunUnits keeps them (leaderboard.models.units)
    stored = [
        [rng.choice(GRADES, size=units).astype(unit).tobytes() for _ in range(k)]
        for _ in range(entries)
    ]
    for _ in range(repeats):
        started = time.perf_counter()
        values = [
            np.vstack([np.frombuffer(data, dtype=unit).astype(np.float64) for data in runs])
            for runs in stored
        ]
        decoded = time.perf_counter() - started
        scores = [run.mean(axis=1).tolist() for run in values]
        found = repeat_statistics(scores, values, passing=1.0)
        took = time.perf_counter() - started
        print(
            f"repeat_statistics, {entries:,} entries x {k} runs x {units:,} units: {took:.2f} s "
            f"({decoded:.2f} s decoding the units; first entry's pass^k {found[0].pass_k:.4f})"
        )


def add_repeats(split: Any, k: int, rng: np.random.Generator) -> None:
    """Trials 1 to k - 1 of every ranked entry of ``split``'s board, done, with units and a
    headline (Django set up by ``rebuild``)."""
    from leaderboard import board_store
    from leaderboard.models import EvaluationRun, Headline, RunUnits
    from leaderboard.models.units import decode, encode

    board = board_store.stored(split, "")
    entries = [run for run, rank in zip(board.runs, board.ranks, strict=True) if rank]
    originals = EvaluationRun.objects.in_bulk(entries)
    heads = Headline.objects.in_bulk(entries)
    stored = dict(RunUnits.objects.filter(run_id__in=entries).values_list("run_id", "values"))
    for trial in range(1, k):
        runs = EvaluationRun.objects.bulk_create(
            EvaluationRun(
                submission_id=originals[run].submission_id, task_id=originals[run].task_id,
                split_id=originals[run].split_id, setting="", trial=trial,
                state=EvaluationRun.State.DONE, judge_id=originals[run].judge_id,
            )
            for run in entries
        )  # fmt: skip
        made, rows = [], []
        for run, again in zip(entries, runs, strict=True):
            values = decode(bytes(stored[run]))
            redrawn = rng.random(values.size) < 0.2
            values[redrawn] = rng.choice(GRADES, size=int(redrawn.sum()))
            made.append(RunUnits(run=again, metric="truthfulness", values=encode(values)))
            head = heads[run]
            rows.append(
                Headline(
                    run=again, split_id=head.split_id, setting="", count=head.count,
                    primary=float(values.mean()), metrics=head.metrics,
                    dimensions=head.dimensions,
                )
            )  # fmt: skip
        RunUnits.objects.bulk_create(made, batch_size=200)
        Headline.objects.bulk_create(rows, batch_size=1000)
    print(f"repeats written: {len(entries):,} entries x {k - 1}")


def rebuild(database: str, units: int, k: int, repeats: int) -> None:
    _database(database)
    from leaderboard import board_store
    from leaderboard.models import EvaluationRun, RankedBoard

    split = _board_split(units)
    if k > 1 and not EvaluationRun.objects.filter(split=split, trial__gt=0).exists():
        add_repeats(split, k, np.random.default_rng(0))
    for _ in range(repeats):
        started = time.perf_counter()
        board_store.results_changed(split.pk)
        elapsed = time.perf_counter() - started
        board = RankedBoard.objects.get(split=split, setting="")
        ranked = sum(rank is not None for rank in board.ranks)
        about = board.statistics.get("repeats")
        print(f"results_changed: {elapsed:.2f} s ({ranked} ranked entries; repeats {about})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("cost")
    run.add_argument("--entries", type=int, default=1000)
    run.add_argument("--units", type=int, default=10000)
    run.add_argument("--k", type=int, default=3)
    run.add_argument("--repeats", type=int, default=3)
    run = commands.add_parser("rebuild")
    run.add_argument("--database", required=True)
    run.add_argument("--units", type=int, default=10000)
    run.add_argument("--k", type=int, default=3)
    run.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    if args.command == "cost":
        repeated(args.entries, args.units, args.k, args.repeats)
    else:
        rebuild(args.database, args.units, args.k, args.repeats)


if __name__ == "__main__":
    main()
