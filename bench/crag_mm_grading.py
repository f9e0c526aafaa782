"""Time CRAG-MM grading: truncation (exact vs fallback), grading a run, writing and reading it.

Builds a synthetic split in memory (conversations of 2-6 turns, the CRAG-MM labels) and
predictions mixing exact answers, "I don't know", short wrong answers and long answers that
exceed 75 tokens. Then times, each as the median of ``--repeat`` runs:

- truncating every answer with the exact Llama-3.2 truncator and with the fallback, side by side;
- ``grade`` with the ``rules`` judge (truncation, missing, exact match, judging, cache look-ups);
- ``score`` (all metrics, slices and intervals), ``write_report`` and ``read_items``.

    PYTHONPATH=. python bench/crag_mm_grading.py --turns 10000 --repeat 3
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from evaluator.benchmarks import get_benchmark
from evaluator.benchmarks.crag_mm.prompt import CragMMRubric
from evaluator.benchmarks.crag_mm.records import Conversation, Prediction, Split, Turn
from evaluator.benchmarks.crag_mm.truncation import (
    FallbackTruncator,
    TokenizerTruncator,
    load_truncator,
)
from evaluator.judges import MemoryCache, RulesJudge
from evaluator.report import read_items, scores_document, write_report

RUBRIC = CragMMRubric()

WORDS = ["the", "a", "red", "large", "old", "famous", "river", "tower", "museum", "bridge", "in"]
NOUNS = ["river", "tower", "museum", "bridge", "kettle", "finch", "jacket", "otter"]
LABELS = {
    "domain": ["animal", "book", "food", "local", "shopping", "vehicle", "plants and gardening"],
    "query_category": ["simple-recognition", "simple-knowledge", "comparison", "multi-hop"],
    "dynamism": ["static", "slow-changing", "fast-changing", "real-time"],
    "image_quality": ["normal", "blurred", "low light", "occluded", "rotated", "truncated"],
}


def synthetic(turns: int, seed: int = 0) -> tuple[Split, dict[str, Prediction]]:
    rng = random.Random(seed)
    conversations, predictions = [], {}
    while sum(len(c.turns) for c in conversations) < turns:
        session_id = f"s{len(conversations):06d}"
        built = []
        for turn_idx in range(rng.randint(2, 6)):
            interaction_id = f"{session_id}-{turn_idx}"
            words = [*rng.choices(WORDS, k=rng.randint(1, 7)), rng.choice(NOUNS)]
            truth = " ".join(words).capitalize()
            labels = {name: rng.choice(values) for name, values in LABELS.items()}
            built.append(Turn(interaction_id, f"Question {interaction_id}?", truth, labels))
            kind = rng.random()
            if kind < 0.35:
                response = truth
            elif kind < 0.55:
                response = rng.choice(["I don't know.", "I don’t know", "I do not know."])
            elif kind < 0.85:
                response = " ".join(rng.choices(WORDS, k=rng.randint(3, 30)))
            else:
                response = " ".join(rng.choices(WORDS, k=rng.randint(80, 400)))
            predictions[interaction_id] = Prediction(session_id, interaction_id, response)
        ego = rng.random() < 0.7
        url = None if ego else "https://example.com/x.jpg"
        conversations.append(Conversation(session_id, None, url, tuple(built)))
    return Split(root=Path("."), conversations=conversations), predictions


def timed(action: Callable[[], object], repeat: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        started = time.perf_counter()
        result = action()
        times.append(time.perf_counter() - started)
    return statistics.median(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    split, predictions = synthetic(args.turns)
    answers = [p.response for p in predictions.values()]
    n = len(answers)
    print(f"{n} turns, {len(split.conversations)} conversations")

    load_s, exact = timed(load_truncator, 1)
    assert isinstance(exact, TokenizerTruncator), exact.name
    fallback = FallbackTruncator("benchmark")
    exact_s, cut_exact = timed(lambda: [exact.truncate(a) for a in answers], args.repeat)
    fallback_s, cut_fallback = timed(lambda: [fallback.truncate(a) for a in answers], args.repeat)
    shortened = sum(c != a for c, a in zip(cut_exact, answers, strict=True))
    kept_exact = sum(map(len, cut_exact))
    kept_fallback = sum(map(len, cut_fallback))
    print(f"tokenizer load (first in process): {load_s:.2f} s")
    print(f"truncation exact:    {exact_s:.3f} s  ({1e6 * exact_s / n:.1f} us/answer)")
    print(f"truncation fallback: {fallback_s:.3f} s  ({1e6 * fallback_s / n:.1f} us/answer)")
    print(f"fallback / exact time: {fallback_s / exact_s:.2f}x; answers cut: {shortened}/{n}")
    print(f"characters kept, fallback / exact: {kept_fallback / kept_exact:.3f}")

    benchmark = get_benchmark("crag-mm", truncator=exact)
    judge = RulesJudge(RUBRIC)
    grade_s, graded = timed(
        lambda: benchmark.grade(split, predictions, judge, MemoryCache(), progress=False),
        args.repeat,
    )
    print(f"grade (rules judge, cold memory cache): {grade_s:.2f} s ({n / grade_s:,.0f} turns/s)")
    score_s, scores = timed(lambda: benchmark.aggregate(graded, seed=0), args.repeat)
    print(f"score (all blocks, slices, intervals): {score_s:.2f} s")
    document = scores_document(benchmark, scores, judge, [], 0)
    with tempfile.TemporaryDirectory() as tmp:
        write_s, _ = timed(lambda: write_report(tmp, benchmark, graded, document), args.repeat)
        read_s, back = timed(lambda: read_items(tmp), args.repeat)
        assert back == graded
        sizes = {p.name: p.stat().st_size for p in Path(tmp).iterdir()}
    print(f"write_report: {write_s:.2f} s; read_items: {read_s:.2f} s; sizes {sizes}")


if __name__ == "__main__":
    main()
