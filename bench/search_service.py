"""Search service figures on the sample data: index build and cache times, query latency
in-process and over search.sock (served by the search process, as runs are) side by side, and
how often an egocentric photo finds its entity.

    python bench/search_service.py [--sample DIR] [--queries N]

Retrieval is scored on single-turn "What is the <attribute> of this ...?" questions whose answer
is some corpus entity's attribute value: a hit when the top (or a top-5) image result is such
an entity. Prints a Markdown report.
"""

from __future__ import annotations

import argparse
import base64
import collections
import io
import json
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evaluator.benchmarks.crag_mm.sample import write_sample
from workers.search.corpus import Corpus
from workers.search.encoders import image_encoder, text_encoder
from workers.search.engine import SearchEngine
from workers.search.process import SearchProcess
from workers.search.rag import rag_context

TASKS = ("single-source-augmentation", "multi-source-augmentation", "multi-turn-qa")
SPLITS = ("validation", "public-test", "private-test")
QUESTION = re.compile(r"What is the (\w+) of this")


def timed(action) -> tuple[float, object]:
    start = time.perf_counter()
    result = action()
    return (time.perf_counter() - start) * 1000, result


def latency_ms(action, repeats: int) -> tuple[float, float]:
    action()  # warm up
    samples = [timed(action)[0] for _ in range(repeats)]
    return statistics.median(samples), statistics.mean(samples)


def retrieval(sample: Path, engine: SearchEngine) -> dict[str, list[int]]:
    entries = Corpus(sample / "corpus").image_entries()
    counts: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0, 0])
    for task in TASKS:
        for split in SPLITS:
            folder = sample / task / split
            for line in (folder / "sessions.jsonl").read_text().splitlines():
                session = json.loads(line)
                turn, answer = session["turns"][0], session["answers"][0]["ans_full"].lower()
                match = QUESTION.match(turn["query"])
                if not match:
                    continue
                holders = {
                    e.entity_name
                    for entry in entries
                    for e in entry.entities
                    if e.entity_attributes.get(match[1])
                    and str(e.entity_attributes[match[1]]).lower() in answer
                }
                if not holders:
                    continue
                with Image.open(folder / session["image"]) as image:
                    results = engine.image_search(image, k=5)
                names = [[e["entity_name"] for e in r["entities"]] for r in results]
                for quality in (turn["image_quality"], "all"):
                    row = counts[quality]
                    row[0] += 1
                    row[1] += any(n in holders for n in names[0])
                    row[2] += any(n in holders for found in names for n in found)
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", type=Path, help="sample data directory (default: generate)")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--text", default="minilm", help="text encoder spec")
    parser.add_argument("--image", default="colour", help="image encoder spec")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="pbs-") as work:
        run(args, Path(work))


def run(args: argparse.Namespace, work: Path) -> None:
    sample = args.sample
    if sample is None:
        sample = work / "sample"
        write_sample(sample, seed=0)
    task = "multi-source-augmentation"

    load_ms, (text, image) = timed(lambda: (text_encoder(args.text), image_encoder(args.image)))

    def fresh_engine() -> SearchEngine:
        corpus_dir = sample / "corpus"
        return SearchEngine(corpus_dir, text_encoder=text, image_encoder=image, cache_dir=work)

    engine = fresh_engine()
    build_ms, _ = timed(lambda: engine.prepare(task))
    cached = fresh_engine()
    cached_ms, _ = timed(lambda: cached.prepare(task))
    assert cached.indexes_built == {"image": False, "web": False}

    photo_path = next((sample / task / "validation" / "images").iterdir())
    photo = Image.open(photo_path)
    photo.load()
    buffer = io.BytesIO()
    photo.save(buffer, "JPEG", quality=90)
    image_b64 = base64.b64encode(buffer.getvalue()).decode()
    query = "What is the brand of the Zovel Strider?"
    n = args.queries
    rows = [
        ("image search, in process", latency_ms(lambda: engine.image_search(photo, k=5), n)),
        ("web search, in process", latency_ms(lambda: engine.web_search(query, k=5), n)),
        (
            "kit B rag_context (k=30 + k=50)",
            latency_ms(lambda: rag_context(engine, query, photo, task), n),
        ),
    ]
    process = SearchProcess(engine.spec)
    start_ms, service = timed(lambda: process.serve(work / "search.sock", task))
    rows.append(
        (
            "kit B rag_context, from the search process",
            latency_ms(lambda: process.rag_context(query, str(photo_path), task), n),
        )
    )
    with process, service:
        transport = httpx.HTTPTransport(uds=str(service.socket_path))
        with httpx.Client(transport=transport, base_url="http://search") as client:
            image_body = {"image_b64": image_b64, "k": 5}
            rows.insert(
                1,
                (
                    "image search, over search.sock",
                    latency_ms(
                        lambda: client.post("/search/image", json=image_body).raise_for_status(), n
                    ),
                ),
            )
            rows.insert(
                3,
                (
                    "web search, over search.sock",
                    latency_ms(
                        lambda: client.post(
                            "/search/web", json={"query": query, "k": 5}
                        ).raise_for_status(),
                        n,
                    ),
                ),
            )

    corpus = Corpus(sample / "corpus")
    print(
        f"Corpus: {len(corpus.image_entries())} images, {len(corpus.web_pages())} web pages; "
        f"encoders {image.id} / {text.id}; photo {photo.size[0]}x{photo.size[1]}\n"
    )
    print("| step | ms |\n| --- | ---: |")
    print(f"| load encoders | {load_ms:.0f} |")
    print(f"| build both indexes (encode corpus) | {build_ms:.0f} |")
    print(f"| open both indexes from cache | {cached_ms:.0f} |")
    print(f"| start the search process, serve (load encoders, open indexes) | {start_ms:.0f} |\n")
    print(f"| query ({n} repeats) | median ms | mean ms |\n| --- | ---: | ---: |")
    for name, (median, mean) in rows:
        print(f"| {name} | {median:.2f} | {mean:.2f} |")
    print(
        "\n| image quality | questions | top-1 finds entity | top-5 |\n| --- | ---: | ---: | ---: |"
    )
    for quality, (count, top1, top5) in sorted(retrieval(sample, engine).items()):
        print(f"| {quality} | {count} | {top1 / count:.0%} | {top5 / count:.0%} |")


if __name__ == "__main__":
    main()
