"""MRAG-Suite's judge cost and wall time: ``--items`` synthetic items graded in one mode with
the ``openai`` judge against a local OpenAI-compatible server (tests/fake_openai.py, in its own
process, answering after ``--latency`` seconds), cold and then with a warm cache.

Every extraction is answered with three claims, every check with three labels, every accuracy
call "correct". The grading has two rounds (extractions and accuracy, then checks), so the
concurrency bound is the sum over rounds of ceil(calls / concurrency) x latency; the goal is
at least 85 % of it. Judge calls are predicted before grading (``judge_calls.predicted``) and
counted after (``requested``: the distinct calls made or answered by the cache).

    PYTHONPATH=. python bench/mrag_suite_judging.py --items 1000 --latency 0.1 --concurrency 64
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evaluator.benchmarks.mrag_suite import MragSuite
from evaluator.benchmarks.mrag_suite.checks import AnswerCase
from evaluator.benchmarks.mrag_suite.diagnosis import first_round
from evaluator.benchmarks.mrag_suite.items import Evidence, MragItem, MragSplit
from evaluator.benchmarks.mrag_suite.modes import COUNTINGS, MragAnswer, answer_key, retrieved
from evaluator.judges import SQLiteCache, make_judge
from tests.fake_openai import FakeOpenAI

CLAIMS = [["revenue", "was", "12 million"], ["growth", "was", "steady"], ["chart", "shows", "it"]]


def serve(latency: float, ready: Any) -> None:
    fake = FakeOpenAI(latency_s=latency)
    fake.keep_payloads = False
    fake.replies["<text>"] = json.dumps({"claims": CLAIMS})
    fake.replies["<claims>"] = json.dumps({"labels": ["Entailment", "Neutral", "Neutral"]})
    fake.reply = "correct"
    ready.send(fake.url)
    fake._server.serve_forever()


def _text(i: int, tag: str, j: int) -> Evidence:
    return Evidence(f"{tag}{j}", "text", f"Firm {i} {tag} {j} revenue.")


def _image(i: int, tag: str, j: int) -> Evidence:
    return Evidence(f"{tag}{j}", "image", f"Chart {i} {tag} {j}.", "x.png")


def build(n: int) -> tuple[MragSplit, dict[str, MragAnswer]]:
    """Items with one gold passage and chart, five distractor passages and four images."""
    items, answers = [], {}
    for i in range(n):
        item = MragItem(
            f"q{i}", f"What was firm {i}'s revenue?", "12 million",
            f"Firm {i} revenue was 12 million. Growth was steady.",
            (_image(i, "g", 0), _text(i, "g", 0)),
            (*(_image(i, "d", j) for j in range(4)), *(_text(i, "d", j) for j in range(5))),
            {"source": "bench"},
        )  # fmt: skip
        items.append(item)
        answers[answer_key("GPD", item.item_id)] = MragAnswer(
            item.item_id, "GPD", f"{12 + i % 2} million", f"Firm {i} made {12 + i % 3} million."
        )
    return MragSplit(Path("."), items), answers


def first_round_calls(
    split: MragSplit, answers: dict[str, MragAnswer], depth: Any, counting: str
) -> int:
    """The distinct calls of the first round (extractions, accuracy)."""
    asked = set()
    for item in split.items:
        case = AnswerCase(item, answers[answer_key("GPD", item.item_id)],
                          tuple(retrieved(item, "GPD", depth, counting)))  # fmt: skip
        asked |= {(c.query, c.ground_truth, c.response) for c in first_round(case).values()}
    return len(asked)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--counting", choices=COUNTINGS, default=COUNTINGS[0])
    args = parser.parse_args()
    receive, send = multiprocessing.Pipe(duplex=False)
    server = multiprocessing.get_context("spawn").Process(
        target=serve, args=(args.latency, send), daemon=True
    )
    server.start()
    url = receive.recv()
    split, answers = build(args.items)
    benchmark = MragSuite(("GPD",), counting=args.counting)
    with tempfile.TemporaryDirectory() as tmp:
        for label in ("cold", "warm"):
            cache = SQLiteCache(Path(tmp) / "cache.sqlite3")
            judge = make_judge(
                "openai", benchmark.rubric, base_url=url, model="bench-judge",
                structured="none", concurrency=args.concurrency, max_retries=0,
            )  # fmt: skip
            started = time.perf_counter()
            graded = benchmark.grade(split, answers, judge, cache, progress=False)
            seconds = time.perf_counter() - started
            cache.close()
            unjudged = sum(item.grade == "unjudged" for item in graded)
            calls = benchmark.calls
            first = first_round_calls(split, answers, benchmark.depth, args.counting)
            rounds = [first, int(calls["requested"]) - first]
            bound = sum(math.ceil(c / args.concurrency) * args.latency for c in rounds)
            print(f"{label}: {args.items} items, {calls['requested']} judge requests "
                  f"({calls['requested'] / args.items:.2f}/item, predicted at most "
                  f"{calls['predicted']}), {seconds:.2f} s, unjudged {unjudged}; "
                  f"bound {bound:.2f} s -> {bound / seconds:.0%} of the bound" if label == "cold"
                  else f"{label}: {seconds:.2f} s, unjudged {unjudged}")  # fmt: skip
    server.terminate()


if __name__ == "__main__":
    main()
