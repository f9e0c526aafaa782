"""Evaluator data layer: sample generation, split and prediction loading, Hugging Face conversion.

Usage: python bench/data_layer.py [--conversations 5000] [--hf-rows 2000] [--repeat 3]
Prints one Markdown table; each figure is the median CPU time of ``--repeat`` runs.
"""

from __future__ import annotations

import argparse
import io
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import datasets
import pandas as pd
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evaluator.benchmarks.crag_mm.hf import convert_hf, load_hf
from evaluator.benchmarks.crag_mm.loading import load_split
from evaluator.benchmarks.crag_mm.predictions import load_predictions, write_predictions
from evaluator.benchmarks.crag_mm.records import Conversation, Prediction, Turn
from evaluator.benchmarks.crag_mm.sample import write_sample
from evaluator.benchmarks.crag_mm.split import write_split

LABELS = {"domain": "food", "query_category": "reasoning", "dynamism": "static"}
LABELS |= {"image_quality": "normal", "entity_popularity": "tail"}


def tiny_jpeg(n: int) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (64, 64), (n % 256, n * 7 % 256, 90)).save(buffer, "JPEG")
    return buffer.getvalue()


def median_seconds(run: Callable[[int], object], repeat: int) -> float:
    """Median CPU seconds of this process (the host is shared: wall time is noisy)."""
    times = []
    for attempt in range(repeat):
        start = time.process_time()
        run(attempt)
        times.append(time.process_time() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=5000, help="2 turns each")
    parser.add_argument("--hf-rows", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="podium-bench-"))
    rows = []

    seconds = median_seconds(lambda n: write_sample(work / f"sample{n}"), args.repeat)
    size = sum(p.stat().st_size for p in (work / "sample0").rglob("*") if p.is_file())
    rows.append(("write_sample (9 splits + corpus)", f"{seconds:.2f} s", f"{size / 1e6:.1f} MB"))

    drafts = []
    for n in range(args.conversations):
        turns = tuple(Turn(f"i{n}-{t}", f"question {t}?", f"answer {t}", LABELS) for t in (0, 1))
        drafts.append((Conversation(f"s{n}", f"images/{n}.jpg", None, turns), tiny_jpeg(n)))
    turns = 2 * args.conversations
    seconds = median_seconds(lambda n: write_split(drafts, work / f"split{n}"), args.repeat)
    rows.append(
        (f"write_split, {turns} turns", f"{seconds:.2f} s", f"{turns / seconds:,.0f} turns/s")
    )
    split = load_split(work / "split0")
    seconds = median_seconds(lambda n: load_split(work / "split0"), args.repeat)
    rows.append(
        (f"load_split, {turns} turns", f"{seconds:.2f} s", f"{turns / seconds:,.0f} turns/s")
    )

    predictions = [
        Prediction(c.session_id, t.interaction_id, "an answer") for c, _, t in split.turns()
    ]
    write_predictions(work / "p.jsonl", predictions)
    table = pd.DataFrame([p.__dict__ for p in predictions]).rename(
        columns={"response": "agent_response"}
    )
    table.to_csv(work / "turn_evaluation_results_all.csv", index=False)
    for name in ("p.jsonl", "turn_evaluation_results_all.csv"):
        seconds = median_seconds(lambda n, f=name: load_predictions(work / f, split), args.repeat)
        rows.append(
            (
                f"load_predictions {name}, {turns}",
                f"{seconds:.2f} s",
                f"{turns / seconds:,.0f} rows/s",
            )
        )

    hf_rows = [
        {
            "session_id": c.session_id,
            "image": {"bytes": image, "path": None},
            "image_url": None,
            "turns": [
                {"interaction_id": t.interaction_id, "query": t.query, **LABELS} for t in c.turns
            ],
            "answers": [
                {"interaction_id": t.interaction_id, "ans_full": t.ground_truth} for t in c.turns
            ],
        }
        for c, image in drafts[: args.hf_rows]
    ]
    datasets.Dataset.from_list(hf_rows).cast_column("image", datasets.Image()).to_parquet(
        work / "hub" / "validation-00000-of-00001.parquet"
    )
    seconds = median_seconds(
        lambda n: convert_hf(work / "hub", work / f"converted{n}"), args.repeat
    )
    rate = args.hf_rows / seconds
    rows.append(
        (
            f"convert_hf parquet, {args.hf_rows} conversations",
            f"{seconds:.2f} s",
            f"{rate:,.0f} conv/s",
        )
    )
    cold = median_seconds(
        lambda n: load_hf(work / "hub", cache_dir=work / f"cache{n}"), args.repeat
    )
    warm = median_seconds(lambda n: load_hf(work / "hub", cache_dir=work / "cache0"), args.repeat)
    rows.append(("load_split on HF data, cold cache", f"{cold:.2f} s", ""))
    rows.append(
        ("load_split on HF data, warm cache", f"{warm:.2f} s", f"{cold / warm:.1f}x faster")
    )

    print("| operation | median CPU time | rate / size |\n| --- | --- | --- |")
    for row in rows:
        print(f"| {' | '.join(row)} |")


if __name__ == "__main__":
    main()
