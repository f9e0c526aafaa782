"""``python -m evaluator``: score a run, compare two runs, write sample data, convert HF data.

Every command works for every benchmark (``--protocol``, default ``crag-mm``), through the
seam (``evaluator.seam``) only; only the benchmark named is imported, and ``score`` offers its
options (``score --protocol NAME --help`` lists them).

Exit codes: 0 done; 2 bad input or configuration (one line on stderr, no traceback);
3 scored but incomplete (some items unjudged: re-run the same command to judge them).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from evaluator import benchmarks
from evaluator.judges import JUDGE_NAMES, JudgmentCache, MemoryCache, SQLiteCache, make_judge
from evaluator.judges.base import STRUCTURED_MODES
from evaluator.judges.transcript import TRANSCRIPT, ReplayJudge, TranscriptWriter
from evaluator.records import EvaluatorError
from evaluator.report import read_items, read_scores, scores_document, write_report

EXIT_OK = 0
EXIT_BAD_INPUT = 2
EXIT_INCOMPLETE = 3
DEFAULT_CACHE = Path("~/.cache/podium/judgments.sqlite")

# --judge-X flag -> make_judge option
_JUDGE_FLAGS = {
    "judge_base_url": "base_url",
    "judge_model": "model",
    "judge_revision": "revision",
    "judge_concurrency": "concurrency",
    "judge_retries": "max_retries",
    "judge_timeout": "attempt_timeout_s",
    "judge_total_timeout": "total_timeout_s",
    "judge_structured": "structured",
}


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text}")
    return value


def _positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text}")
    return value


def _benchmark_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--protocol",
        dest="benchmark",
        metavar="BENCHMARK",
        choices=benchmarks.names(),
        default=benchmarks.DEFAULT,
        help=f"the benchmark: {', '.join(benchmarks.names())} (default {benchmarks.DEFAULT})",
    )


def chosen_benchmark(argv: Sequence[str] | None) -> str | None:
    """The benchmark whose options ``score`` offers: the one ``--protocol`` names in ``argv``
    (the default when none, or when it is not one: the full parser then says so); None for
    another command (or none), which then imports no benchmark to be parsed."""
    words = sys.argv[1:] if argv is None else argv
    if next((word for word in words if not word.startswith("-")), None) != "score":
        return None
    found, _ = _chooser().parse_known_args(argv)
    name: str = found.benchmark
    return name if benchmarks.is_known(name) else benchmarks.DEFAULT


def _chooser() -> argparse.ArgumentParser:
    chooser = argparse.ArgumentParser(add_help=False)
    chooser.add_argument("--protocol", dest="benchmark", default=benchmarks.DEFAULT)
    return chooser


def build_parser(benchmark: str | None = None) -> argparse.ArgumentParser:
    """The CLI's parser; ``score`` carries the options of ``benchmark`` (None: no benchmark's,
    none imported)."""
    parser = argparse.ArgumentParser(
        prog="python -m evaluator",
        description=f"Podium's offline evaluator (benchmarks: {', '.join(benchmarks.names())}).",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    score = commands.add_parser("score", help="grade predictions against a split")
    _benchmark_option(score)
    score.add_argument("--split", required=True, help="split directory (or Hugging Face data)")
    score.add_argument("--predictions", required=True, help="predictions JSONL")
    score.add_argument("--out", required=True, help="output directory")
    score.add_argument(
        "--judge",
        choices=JUDGE_NAMES,
        default="rules",
        help="rules (default: deterministic, offline, not an LLM), openai (a compatible server) "
        "or replay (the judge calls of --transcript, no model call)",
    )
    score.add_argument(
        "--transcript",
        type=Path,
        help="with --judge replay: a transcript.jsonl written by an earlier score",
    )
    judge = score.add_argument_group("openai judge (defaults from PODIUM_JUDGE_* variables)")
    judge.add_argument("--judge-base-url", help="OpenAI-compatible endpoint, e.g. vLLM's /v1")
    judge.add_argument("--judge-model", help="model name on that server")
    judge.add_argument(
        "--judge-api-key-env",
        metavar="VAR",
        help="environment variable holding the API key (the key never goes on the command line)",
    )
    judge.add_argument("--judge-revision", help="model weights revision, recorded in verdicts")
    judge.add_argument("--judge-concurrency", type=_positive_int, help="requests at once")
    judge.add_argument("--judge-retries", type=int, help="retries on retryable errors")
    judge.add_argument("--judge-timeout", type=_positive_float, help="seconds per attempt")
    judge.add_argument("--judge-total-timeout", type=_positive_float, help="seconds per turn")
    judge.add_argument(
        "--judge-structured", choices=STRUCTURED_MODES, help="structured output mode"
    )
    cache = score.add_mutually_exclusive_group()
    cache.add_argument("--cache", type=Path, help=f"judgment cache file (default {DEFAULT_CACHE})")
    cache.add_argument("--no-cache", action="store_true", help="judge everything afresh")
    if benchmark is not None:
        benchmarks.benchmark_class(benchmark).add_arguments(
            score.add_argument_group(
                f"{benchmark} options (another benchmark's: --protocol NAME --help)"
            )
        )
    score.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    score.add_argument("--no-progress", action="store_true", help="no progress bar")

    compare = commands.add_parser("compare", help="paired comparison of two scored runs")
    compare.add_argument("a", help="first run's output directory")
    compare.add_argument("b", help="second run's output directory")
    compare.add_argument("--counting", help="crag-mm: counting order (default: the first run's)")
    compare.add_argument("--seed", type=int, help="default: the first run's seed")

    sample = commands.add_parser("sample", help="write a benchmark's generated sample data")
    sample.add_argument("out", help="output directory")
    _benchmark_option(sample)
    sample.add_argument("--seed", type=int, default=0)

    convert = commands.add_parser("convert", help="convert Hugging Face CRAG-MM data to a split")
    convert.add_argument("src", help="a datasets save_to_disk directory or parquet files")
    convert.add_argument("out", help="output split directory")
    convert.add_argument("--hf-split", help="which split, when the data holds several")
    return parser


def _judge_options(args: argparse.Namespace) -> dict[str, object]:
    options = {option: getattr(args, flag) for flag, option in _JUDGE_FLAGS.items()}
    if args.judge_api_key_env:
        key = os.environ.get(args.judge_api_key_env)
        if not key:
            raise EvaluatorError(f"--judge-api-key-env: ${args.judge_api_key_env} is not set")
        options["api_key"] = key
    return {name: value for name, value in options.items() if value is not None}


def score(args: argparse.Namespace) -> int:
    benchmark = benchmarks.benchmark_class(args.benchmark).from_arguments(args)
    split = benchmark.load_split(args.split)
    predictions, warnings = benchmark.load_predictions(args.predictions, split)
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    replay = args.judge == "replay"
    if replay != (args.transcript is not None):
        raise EvaluatorError("--transcript goes with --judge replay, and --judge replay needs it")
    options = {"transcript": args.transcript} if replay else _judge_options(args)
    judge = make_judge(args.judge, benchmark.rubric, **options)
    if isinstance(judge, ReplayJudge):  # a line whose key this split never asks is refused
        judge.refuse_unasked(benchmark.never_asked(split, judge.lines.keys()))
    cache: JudgmentCache | None = None  # a replay asks its transcript only
    if not replay:
        cache = (
            MemoryCache()
            if args.no_cache
            else SQLiteCache((args.cache or DEFAULT_CACHE).expanduser())
        )
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    partial = out_dir / f"{TRANSCRIPT}.partial"
    try:
        with partial.open("w", encoding="utf-8") as stream:
            graded = benchmark.grade(
                split,
                predictions,
                judge,
                cache,
                progress=not args.no_progress,
                transcript=None if replay else TranscriptWriter(stream),
            )
        if not replay:
            partial.replace(out_dir / TRANSCRIPT)
    finally:
        partial.unlink(missing_ok=True)
        asyncio.run(judge.aclose())
        if isinstance(cache, SQLiteCache):
            cache.close()
    scores = dict(benchmark.score(graded, seed=args.seed).document)
    document = scores_document(
        benchmark, scores, judge, [*warnings, *scores.pop("warnings", [])], args.seed
    )
    out = write_report(args.out, benchmark, graded, document)
    print(benchmark.summary(document, graded), end="")
    print(f"wrote {out}", file=sys.stderr)
    return EXIT_OK if document["complete"] else EXIT_INCOMPLETE


def compare(args: argparse.Namespace) -> int:
    first, second = read_scores(args.a), read_scores(args.b)
    if first["protocol"] != second["protocol"]:
        raise EvaluatorError(
            f"the runs were scored by different benchmarks: {first['protocol']} vs "
            f"{second['protocol']}"
        )
    for setting in ("judge", "truncation", "missing_variant"):
        if first.get(setting) != second.get(setting):
            print(
                f"warning: the runs differ in {setting}: {first.get(setting)} vs "
                f"{second.get(setting)}",
                file=sys.stderr,
            )
    if args.counting:
        first = first | {"counting": args.counting}
    benchmark = benchmarks.benchmark_class(first["protocol"]).from_document(first)
    seed = first.get("seed", 0) if args.seed is None else args.seed
    result = benchmark.compare(read_items(args.a), read_items(args.b), seed)
    print(benchmark.format_comparison(result.document, args.a, args.b))
    return EXIT_OK


def sample(args: argparse.Namespace) -> int:
    benchmarks.get_benchmark(args.benchmark).write_sample(args.out, seed=args.seed)
    print(f"wrote sample data to {args.out}", file=sys.stderr)
    return EXIT_OK


def convert(args: argparse.Namespace) -> int:
    from evaluator.benchmarks.crag_mm.hf import convert_hf

    split = convert_hf(args.src, args.out, hf_split=args.hf_split)
    for note in split.notes:
        print(f"converted: {note}", file=sys.stderr)
    print(f"wrote {len(split.conversations)} conversations to {args.out}", file=sys.stderr)
    return EXIT_OK


COMMANDS = {"score": score, "compare": compare, "sample": sample, "convert": convert}


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser(chosen_benchmark(argv)).parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except EvaluatorError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("interrupted: verdicts made so far are in the judgment cache", file=sys.stderr)
        return 130
