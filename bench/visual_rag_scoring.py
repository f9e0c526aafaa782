"""Time Visual-RAG scoring: grading (retrieval metrics, ROUGE-1, the rules judge), scores with
slices and intervals, writing and reading the per-item table.

Builds a synthetic split in memory (``--queries`` queries over 30 species, 300 candidates and
about 16 clues each, as in the paper) and predictions in five settings (``retrieval`` with a
full ranking, ``zero_shot``, ``gt_clue``, ``non_clue``, ``one_in_5``), answers mixing annotator
answers, "I don't know", partial and wrong ones. Each figure is the median of ``--repeat`` runs.

    PYTHONPATH=. python bench/visual_rag_scoring.py --queries 2000 --repeat 3
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from evaluator.benchmarks.visual_rag import VisualRAG
from evaluator.benchmarks.visual_rag.items import (
    VisualPrediction,
    VisualQuery,
    VisualSplit,
    prediction_key,
)
from evaluator.judges import MemoryCache, make_judge
from evaluator.report import read_items, scores_document, write_report

SETTINGS = ("retrieval", "zero_shot", "gt_clue", "non_clue", "one_in_5")
COLOURS = ["orange", "blue", "black and white", "yellow", "red", "green", "brown", "purple"]


def build(queries: int, seed: int) -> tuple[VisualSplit, dict[str, VisualPrediction]]:
    rng = random.Random(seed)
    split_queries, predictions = [], {}
    for number in range(queries):
        candidates = tuple(f"img{number}-{i}" for i in range(300))
        clues = frozenset(rng.sample(candidates, rng.randint(4, 28)))
        colour = rng.choice(COLOURS)
        query = VisualQuery(
            f"q{number}",
            f"What colour are the hindwings of species {number % 30}?",
            (colour, f"bright {colour}"),
            candidates,
            clues,
            {"species": f"species {number % 30}", "feature": rng.choice(["wing", "beak"])},
        )
        split_queries.append(query)
        for setting in SETTINGS:
            answer = rng.choice(
                [colour, f"The hindwings are {colour}.", "I don't know", "grey", f"{colour} dots"]
            )
            ranking = None
            if setting == "retrieval":
                order = list(candidates)
                rng.shuffle(order)
                order.sort(key=lambda image: image not in clues and rng.random() < 0.8)
                ranking = tuple(order)
            predictions[prediction_key(setting, query.query_id)] = VisualPrediction(
                query.query_id, setting, answer, ranking
            )
    return VisualSplit(Path("."), split_queries, {}, "podium"), predictions


def timed(work: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(repeat):
        started = time.perf_counter()
        result = work()
        times.append(time.perf_counter() - started)
    return statistics.median(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    split, predictions = build(args.queries, args.seed)
    benchmark = VisualRAG(SETTINGS)
    judge = make_judge("rules", benchmark.rubric)

    def grade() -> Any:
        return benchmark.grade(split, predictions, judge, MemoryCache(), progress=False)

    grade_s, graded = timed(grade, args.repeat)
    score_s, scores = timed(lambda: benchmark.aggregate(graded, seed=0), args.repeat)
    document = scores_document(benchmark, scores, judge, [], 0)
    with tempfile.TemporaryDirectory() as tmp:
        write_s, _ = timed(lambda: write_report(tmp, benchmark, graded, document), args.repeat)
        read_s, back = timed(lambda: read_items(tmp), args.repeat)
    assert back == graded
    items = len(graded)
    print(f"{items} items ({args.queries} queries x {len(SETTINGS)} settings)")
    print(f"grade: {grade_s:.2f} s ({grade_s / items * 1e6:.0f} us/item)")
    print(f"score (blocks, {len(scores['slices'])} label dimensions, intervals): {score_s:.2f} s")
    print(f"write_report: {write_s:.2f} s; read_items: {read_s:.2f} s")
    print(f"total: {grade_s + score_s:.2f} s; recall@30 {scores['retrieval']['recall@30']:.1f}")


if __name__ == "__main__":
    main()
