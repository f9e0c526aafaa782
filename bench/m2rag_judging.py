"""M2RAG judging: wall time and judge calls for many answers with placed images, cold and warm.

Two fake OpenAI-compatible servers (tests/fake_openai.py, each in its own process) answer
every request after ``--latency`` seconds: one for the text prompts, one (the vision
endpoint) for the image prompts. Each answer places 3 images: 5 text calls and 9 vision calls,
predicted before judging and counted after, with the judging process's CPU time (the servers
run in their own processes). The same answers are then graded again against the warm SQLite
cache (no call).

    python bench/m2rag_judging.py --answers 1000 --latency 0.1 --concurrency 32
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evaluator.benchmarks.m2rag import M2RAG
from evaluator.benchmarks.m2rag.items import M2Prediction
from evaluator.benchmarks.m2rag.sample import draw
from evaluator.judges import SQLiteCache, make_judge
from tests.fake_openai import FakeOpenAI


def reply(payload: dict[str, Any]) -> str:
    system = payload["messages"][0]["content"]
    if "Break the answer" in system:
        return '{"statements": ["a", "b"]}'
    if "contexts support it" in system:
        return '{"verdicts": [1, 0]}'
    if "useful in arriving" in system:
        return '{"verdicts": [1, 0, 1, 1, 0]}'  # 2 pages, 3 captions
    return "Fine.\n7"


def serve(latency_s: float, ready: Any) -> None:
    fake = FakeOpenAI(latency_s=latency_s)
    fake.keep_payloads = False
    fake.respond = reply
    fake.start()
    ready.send(fake.url)
    while True:
        time.sleep(3600)


def write_split(root: Path, answers: int) -> dict[str, M2Prediction]:
    (root / "images").mkdir(parents=True)
    rng = random.Random(0)
    lines, predictions = [], {}
    for i in range(answers):
        files = []
        for j in range(3):  # distinct bytes per image: no two answers share a judged image
            name = f"images/{i}-{j}.png"
            (root / name).write_bytes(draw("circle", (i % 256, j * 80, 90), rng))
            files.append({"file": name, "score": 9 - 3 * j, "caption": f"circle {i} {j}"})
        pages = [{"title": "", "text": f"Page {p} of query {i} about circles.",
                  "images": [files[p]]} for p in range(2)]  # fmt: skip
        record = {"query_id": f"q{i}", "query": f"Circle {i}?", "topic": f"t{i % 10}",
                  "pages": pages, "extra_images": [files[2]]}  # fmt: skip
        lines.append(json.dumps(record) + "\n")
        answer = " ".join(f"Circle {i} part {j}. ![c](image {j})" for j in range(3))
        predictions[f"q{i}"] = M2Prediction(f"q{i}", answer)
    (root / "queries.jsonl").write_text("".join(lines))
    return predictions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--answers", type=int, default=1000)
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--concurrency", type=int, default=32, help="per endpoint")
    args = parser.parse_args()
    os.environ["PODIUM_JUDGE_CONCURRENCY"] = str(args.concurrency)  # the vision judge's
    # round one is bound by the vision endpoint (9 calls an answer), round two is 1 text call
    ideal = 10 * args.answers * args.latency / args.concurrency
    servers, urls = [], []
    for _ in range(2):
        receive, send = multiprocessing.Pipe(duplex=False)
        process = multiprocessing.Process(target=serve, args=(args.latency, send), daemon=True)
        process.start()
        servers.append(process)
        urls.append(receive.recv())
    with tempfile.TemporaryDirectory() as tmp:
        predictions = write_split(Path(tmp) / "split", args.answers)
        cache = SQLiteCache(Path(tmp) / "cache.sqlite3")
        for label in ("cold", "warm"):
            benchmark = M2RAG(vision_base_url=urls[1], vision_model="fake-judge")
            split = benchmark.load_split(Path(tmp) / "split")
            judge = make_judge("openai", benchmark.rubric, base_url=urls[0], model="fake-judge",
                               api_key="k", concurrency=args.concurrency)  # fmt: skip
            started, cpu = time.perf_counter(), time.process_time()
            graded = benchmark.grade(split, predictions, judge, cache, progress=False)
            seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
            unjudged = sum(item.grade == "unjudged" for item in graded)
            calls = benchmark.calls
            print(
                f"{label}: {args.answers} answers, judge calls predicted {calls['predicted']}, "
                f"asked {calls['asked']}, made {calls['made']}; {seconds:.1f} s; "
                f"CPU {cpu:.1f} s ({1000 * cpu / calls['asked']:.2f} ms a call asked); "
                f"unjudged {unjudged}; ideal cold {ideal:.1f} s"
            )
    for process in servers:
        process.kill()


if __name__ == "__main__":
    main()
