"""``python -m workers.search build --corpus DIR``: build and cache a corpus's search indexes."""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

from workers.search.corpus import CorpusError
from workers.search.engine import IMAGE_ENCODER_ENV, TEXT_ENCODER_ENV, SearchEngine
from workers.search.index import CACHE_ENV


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m workers.search")
    commands = parser.add_subparsers(dest="command", required=True)
    build = commands.add_parser("build", help="build (or find cached) indexes for a corpus")
    build.add_argument("--corpus", type=Path, required=True, help="the corpus directory")
    build.add_argument(
        "--cache-dir",
        type=Path,
        help=f"index cache (default ${CACHE_ENV} or ~/.cache/podium/search)",
    )
    build.add_argument(
        "--text-encoder", help=f"text encoder spec (default ${TEXT_ENCODER_ENV} or minilm)"
    )
    build.add_argument(
        "--image-encoder", help=f"image encoder spec (default ${IMAGE_ENCODER_ENV} or colour)"
    )
    build.add_argument(
        "--task",
        default="multi-turn-qa",
        help="build what this task needs (single-source-augmentation: image index only)",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    engine = SearchEngine(
        args.corpus,
        text_encoder=args.text_encoder,
        image_encoder=args.image_encoder,
        cache_dir=args.cache_dir,
    )
    started = time.monotonic()
    try:
        engine.prepare(args.task)
    except (CorpusError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for name, built in engine.indexes_built.items():
        print(f"{name} index: {'built' if built else 'already cached'}")
    print(f"done in {time.monotonic() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
