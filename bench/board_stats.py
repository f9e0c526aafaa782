"""Board statistics measured: coverage by simulation, and their cost when results change.

Usage:
    python bench/board_stats.py coverage [--boards 1000] [--seed 0]
    python bench/board_stats.py cost [--entries 1000] [--units 10000] [--repeats 3]
    python bench/board_stats.py slices [--entries 1000] [--units 10000] [--values 20]
    python bench/board_stats.py slice-view --database boards_bench [--units 10000]
    python bench/board_stats.py rebuild --database boards_bench [--units 10000] [--repeats 3]

``coverage``: simulated boards with known true scores.
- Calibrated scores (``evaluator.calibrated``): per board, 10,000 items whose people's grade is
  correct (1), missing (0) or hallucinated (-1) with shares drawn afresh; a judge with a known
  error pattern (``CONFUSION``: its verdict given the people's grade) grades every item; 200
  are labelled, drawn as a judge audit draws them (stratified by the judge's verdict,
  ``evaluator.judge_audit.draw``), and once as a simple random sample. The true score is the
  expected grade. Reports how often each interval covers it and its mean width against the
  interval the 200 labels alone give (their mean, ``labels_only``).
- Rank intervals (``evaluator.board_stats``): per board, 20 entries whose skills are drawn
  uniformly in [-0.3, 0.3], 10,000 items of difficulty ~ N(0, 1), an entry right on an item
  with probability sigmoid(skill - difficulty): its true score is increasing in its skill, so
  the true ranks are the skills' order. Reports how often an entry's rank interval holds its
  true rank (and how often a whole board's do).
``cost``: ``board_statistics`` on a random board of ``--entries`` x ``--units`` (2 threads).
``slices``: the same board cut into ``--values`` slice values (the units shared out at random
over ``--dimensions`` dimensions, each a partition of the units, as CRAG-MM's domain, query type,
image quality and ego are): times every value's statistics (``slice_statistics.value_statistics``,
the arithmetic a slice table's first view computes per dimension), per dimension and in all.
``slice-view``: in the database ``rebuild`` fills, gives the units 21 slice values in three
dimensions (``VIEW_SLICES``, drawn at random) and times ``slice_statistics`` of each dimension
on the board (reading the entries' units and their slices, every value's statistics, the
calibrated scores); then, after each results change, the task it sends
(``slice_store.store_all``: every dimension of the board), the domain table's first view once
the task stored them (and, beside it, the same table of a metric that shows no statistics), and
its first view without (the view computes them, as when the task has not run yet).
``rebuild``: in a database seeded by ``bench/seed_leaderboard.py``, gives every run of the
multi-turn board's split ``--units`` units (values in {-1, 0, 1} whose mean is its score) and
times ``board_store.results_changed`` of that split: ranking, reading the entries' units and
their statistics, storing the board.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evaluator.board_stats import board_ranks, board_statistics, rank_intervals
from evaluator.calibrated import calibrated_mean, labels_only
from evaluator.judge_audit import draw

if TYPE_CHECKING:
    from leaderboard.models import Split

GRADES = np.array([1.0, 0.0, -1.0])  # correct, missing, hallucinated
# the judge's verdict (columns) given the people's grade (rows): agreement ~ 0.9
CONFUSION = np.array([[0.90, 0.03, 0.07], [0.04, 0.92, 0.04], [0.12, 0.03, 0.85]])


def calibrated_board(rng: np.random.Generator, items: int, labels: int) -> dict[str, float]:
    shares = rng.dirichlet([4.0, 2.0, 3.0])
    truth = float(shares @ GRADES)
    people = rng.choice(3, size=items, p=shares)
    cumulative = CONFUSION.cumsum(axis=1)[people]
    judge = (rng.random(items)[:, None] > cumulative).sum(axis=1)
    f, y = GRADES[judge], GRADES[people]
    strata = {int(v): np.flatnonzero(judge == v).tolist() for v in range(3)}
    picked = draw(strata, labels, seed=int(rng.integers(2**31)))
    index = np.array([item for _, item in picked])
    verdicts = [stratum for stratum, _ in picked]
    weights = {v: len(members) / items for v, members in strata.items()}
    stratified = calibrated_mean(f, f[index], y[index], verdicts, weights)
    simple = rng.choice(items, size=labels, replace=False)
    unstratified = calibrated_mean(f, f[simple], y[simple])
    alone = labels_only(y[simple])
    result = {"alone_width": alone.width, "alone_covers": alone.ci[0] <= truth <= alone.ci[1]}
    for name, found in (("stratified", stratified), ("simple", unstratified)):
        result[f"{name}_covers"] = found.ci[0] <= truth <= found.ci[1]
        result[f"{name}_width"] = found.width
    return result


def ranked_board(rng: np.random.Generator, entries: int, items: int) -> tuple[int, int]:
    skills = rng.uniform(-0.3, 0.3, entries)
    difficulty = rng.normal(0.0, 1.0, items)
    chance = 1.0 / (1.0 + np.exp(-(skills[:, None] - difficulty[None, :])))
    values = (rng.random((entries, items)) < chance).astype(np.float64)
    order = np.argsort(-values.mean(axis=1), kind="stable")  # the board's order
    true_ranks = board_ranks(skills[order], higher_is_better=True, shared=True)
    low, high = rank_intervals(values[order], seed=int(rng.integers(2**31)))
    covered = (low <= true_ranks) & (true_ranks <= high)
    return int(covered.sum()), int(covered.all())


def coverage(boards: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    started = time.perf_counter()
    found = [calibrated_board(rng, 10_000, 200) for _ in range(boards)]
    took = time.perf_counter() - started
    print(f"calibrated scores: {boards} boards, 10,000 items, 200 labels ({took:.0f} s)")
    alone = np.mean([b["alone_width"] for b in found])
    print("| interval | covers the true score | mean width | width / labels alone |")
    print("| --- | --- | --- | --- |")
    for name, label in (
        ("stratified", "calibrated, audit sample (stratified by verdict)"),
        ("simple", "calibrated, simple random sample"),
        ("alone", "the 200 labels alone (simple random sample)"),
    ):
        covers = np.mean([b[f"{name}_covers"] for b in found])
        width = np.mean([b[f"{name}_width"] for b in found])
        print(f"| {label} | {covers:.1%} | {width:.4f} | {width / alone:.2f} |")
    started = time.perf_counter()
    ranks = [ranked_board(rng, 20, 10_000) for _ in range(boards)]
    entries = sum(r[0] for r in ranks) / (20 * boards)
    whole = sum(r[1] for r in ranks) / boards
    print(
        f"rank intervals: {boards} boards x 20 entries, 10,000 items: an entry's interval holds "
        f"its true rank {entries:.1%}; every entry's of a board {whole:.1%} "
        f"({time.perf_counter() - started:.0f} s)"
    )


def cost(entries: int, units: int, repeats: int) -> None:
    rng = np.random.default_rng(0)
    scores = np.sort(rng.uniform(0.2, 0.8, entries))[::-1]
    values = (rng.random((entries, units)) < scores[:, None]).astype(np.float64)
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        board_statistics(values)
        times.append(time.perf_counter() - started)
    shown = ", ".join(f"{t:.2f}" for t in times)
    print(f"board_statistics, {entries:,} entries x {units:,} units: {shown} s")


def slices(entries: int, units: int, values: int, dimensions: int, repeats: int) -> None:
    from leaderboard.slice_statistics import value_statistics

    rng = np.random.default_rng(0)
    scores = np.sort(rng.uniform(0.2, 0.8, entries))[::-1]
    board = (rng.random((entries, units)) < scores[:, None]).astype(np.float64)
    per_dimension = np.full(dimensions, values // dimensions)
    per_dimension[: values % dimensions] += 1
    cuts = [rng.integers(0, k, size=units) for k in per_dimension]
    for _ in range(repeats):
        times = []
        for cut, k in zip(cuts, per_dimension, strict=True):
            started = time.perf_counter()
            for value in range(k):
                value_statistics(board[:, cut == value], True, True)
            times.append(time.perf_counter() - started)
        shown = ", ".join(f"{t:.2f}" for t in times)
        print(
            f"slices, {entries:,} entries x {units:,} units, {values} values in {dimensions} "
            f"dimensions: per dimension {shown} s; all {sum(times):.2f} s"
        )


def _database(database: str) -> None:
    os.environ["DATABASE_URL"] = f"postgres://postgres@127.0.0.1:5432/{database}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "podium.settings")
    import django

    django.setup()


def _board_split(units: int) -> Split:
    """The seeded multi-turn board's split, its runs given ``units`` units once."""
    from leaderboard.models import Headline, RunUnits, Split
    from leaderboard.models.units import encode

    split = Split.objects.get(task__task_id="multi-turn-qa", kind="public-test")
    rng = np.random.default_rng(0)
    if not RunUnits.objects.filter(run__split=split).exists():
        rows = Headline.objects.filter(split=split).values_list("run_id", "primary")
        made = []
        for run_id, primary in rows:
            p = min(max(float(primary or 0.0), -1.0), 1.0)
            shares = [max(p, 0.0) * 0.9 + 0.05, 0.0, max(-p, 0.0) * 0.9 + 0.05]
            shares[1] = max(1.0 - shares[0] - shares[2], 0.0)
            values = rng.choice(GRADES, size=units, p=np.array(shares) / sum(shares))
            made.append(RunUnits(run_id=run_id, metric="truthfulness", values=encode(values)))
        RunUnits.objects.bulk_create(made, batch_size=200)
        print(f"units written for {len(made):,} runs")
    return split


def rebuild(database: str, units: int, repeats: int) -> None:
    _database(database)
    from leaderboard import board_store
    from leaderboard.models import RankedBoard

    split = _board_split(units)
    for _ in range(repeats):
        started = time.perf_counter()
        board_store.results_changed(split.pk)
        elapsed = time.perf_counter() - started
        board = RankedBoard.objects.get(split=split, setting="")
        ranked = sum(rank is not None for rank in board.ranks)
        print(f"results_changed: {elapsed:.2f} s ({ranked} ranked entries; {board.statistics})")


# the slice values of ``slice-view``: 21 in three dimensions, named as CRAG-MM's labels
VIEW_SLICES = {
    "domain": 13,
    "query_category": 6,
    "is_ego": 2,
}


def slice_view(database: str, units: int, repeats: int) -> None:
    _database(database)
    from leaderboard import board_store, unit_slices
    from leaderboard.models import RunUnits
    from leaderboard.slice_statistics import slice_statistics

    split = _board_split(units)
    rng = np.random.default_rng(1)
    drawn = {
        name: [f"{name}-{v}" for v in rng.integers(0, count, size=units)]
        for name, count in VIEW_SLICES.items()
    }
    digest = unit_slices.keep(drawn)
    RunUnits.objects.filter(run__split=split).update(slices=digest)
    board_store.results_changed(split.pk)
    for _ in range(repeats):
        times = []
        for dimension in VIEW_SLICES:
            started = time.perf_counter()
            found = slice_statistics(split, "", dimension)
            times.append(time.perf_counter() - started)
            assert not found.unavailable, found.unavailable
        entries = len(next(iter(found.values.values())).places)
        shown = ", ".join(f"{d} {t:.2f}" for d, t in zip(VIEW_SLICES, times, strict=True))
        print(
            f"slice_statistics, {entries} entries x {units:,} units: {shown} s; "
            f"all {sum(times):.2f} s"
        )
    _page_views(split, repeats)


def _page_views(split: Split, repeats: int) -> None:
    """The domain table's page after a results change: once the task it sends has stored the
    statistics (timed too), and without it (the view computes them); then again (cached)."""
    from django.test import Client
    from django.urls import reverse

    from leaderboard import board_store, dispatch, slice_store
    from leaderboard.models import RankedSlices

    sent: list[dict] = []  # the task's messages, run here instead of by a worker
    dispatch.app.send_task = lambda name, kwargs, queue: sent.append(kwargs)  # type: ignore[method-assign]
    args = (split.task.challenge.slug, split.task.task_id, split.kind)
    url = reverse("leaderboard:slices", args=args) + "?dimension=domain"
    client = Client(HTTP_HOST="localhost")

    def views(query: str = "") -> str:
        took = []
        for _ in range(2):
            started = time.perf_counter()
            response = client.get(url + query)
            took.append(time.perf_counter() - started)
            assert response.status_code == 200, response.status_code
        return f"first view {took[0] * 1000:.1f} ms, then {took[1] * 1000:.1f} ms"

    views()  # a warm process: its first request compiles the templates
    for _ in range(repeats):
        sent.clear()
        board_store.results_changed(split.pk)
        split.refresh_from_db()
        started = time.perf_counter()
        outcome = slice_store.store_all(**sent[0])
        took = time.perf_counter() - started
        each = RankedSlices.objects.filter(split=split).values_list("dimension", "seconds")
        shown = ", ".join(f"{d} {t:.2f}" for d, t in sorted(each) if t >= 0.01)
        print(f"task: {took:.2f} s for {outcome['stored']} dimensions ({shown} s; the rest < 0.01)")
        gc.collect()  # the task's garbage: a worker's, never the web process's
        started = time.perf_counter()
        slice_store.read(split, "", "domain")  # what the view spends on them (never cached)
        print(f"its domain row read: {(time.perf_counter() - started) * 1000:.1f} ms")
        print(f"slice page (domain), the task's row stored: {views()}")
        print(f"  beside it, accuracy (no statistics shown): {views('&metric=accuracy')}")
        board_store.results_changed(split.pk)  # its task not run: the view computes them
        print(f"slice page (domain), no row for this version: {views()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("coverage")
    run.add_argument("--boards", type=int, default=1000)
    run.add_argument("--seed", type=int, default=0)
    run = commands.add_parser("cost")
    run.add_argument("--entries", type=int, default=1000)
    run.add_argument("--units", type=int, default=10_000)
    run.add_argument("--repeats", type=int, default=3)
    run = commands.add_parser("slices")
    run.add_argument("--entries", type=int, default=1000)
    run.add_argument("--units", type=int, default=10_000)
    run.add_argument("--values", type=int, default=20)
    run.add_argument("--dimensions", type=int, default=4)
    run.add_argument("--repeats", type=int, default=3)
    run = commands.add_parser("slice-view")
    run.add_argument("--database", required=True)
    run.add_argument("--units", type=int, default=10_000)
    run.add_argument("--repeats", type=int, default=3)
    run = commands.add_parser("rebuild")
    run.add_argument("--database", required=True)
    run.add_argument("--units", type=int, default=10_000)
    run.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    if args.command == "coverage":
        coverage(args.boards, args.seed)
    elif args.command == "cost":
        cost(args.entries, args.units, args.repeats)
    elif args.command == "slices":
        slices(args.entries, args.units, args.values, args.dimensions, args.repeats)
    elif args.command == "slice-view":
        slice_view(args.database, args.units, args.repeats)
    else:
        rebuild(args.database, args.units, args.repeats)


if __name__ == "__main__":
    main()
