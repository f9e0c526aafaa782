"""``python -m workers.cli``: run an agent image on a split and write its predictions.

The split is read by ``--protocol`` (CRAG-MM by default; Visual-RAG runs one ``--setting``), and
the agent is asked as a server run asks it (the benchmark's agent plan). Predictions go to
``--out`` in the benchmark's predictions format (``python -m evaluator score`` grades them) the
moment each answer arrives (append + fsync). Every item's outcome (answered / timeout / error /
invalid) also goes to ``<out>.outcomes.jsonl``; an item without an answer has no prediction, so
it is scored as missing. Started again with the same ``--out``, the run resumes: items in either
file are never asked again.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Literal, get_args, get_origin, get_type_hints

from tqdm import tqdm

from evaluator.benchmarks import DEFAULT, benchmark_class, names
from evaluator.records import EvaluatorError
from evaluator.seam import SomeBenchmark
from workers.faults import RuntimeMissing
from workers.images import ImageError
from workers.limits import OPTIONS, Limits, option_text
from workers.outcomes import ItemResult, SearchUnavailable
from workers.runner import run_agent
from workers.runtimes import RUNTIMES
from workers.sandbox import SandboxPolicy

if TYPE_CHECKING:
    from workers.search.process import SearchProcess

SIZE_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}


def parse_size(text: str) -> int:
    """Bytes from "512m", "16g", "1048576" (binary units, as docker's --memory)."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmg]?)i?b?\s*", text.lower())
    if not match or float(match.group(1)) <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size such as 512m or 16g")
    return int(float(match.group(1)) * SIZE_UNITS[match.group(2)])


def _number(kind: type[int] | type[float]) -> Callable[[str], float | int]:
    def parse(text: str) -> float | int:
        try:
            return kind(text)
        except ValueError:
            what = "a whole number" if kind is int else "a number"
            raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None

    return parse


def _positive(kind: type[int] | type[float]) -> Callable[[str], float | int]:
    def parse(text: str) -> float | int:
        value = _number(kind)(text)
        if value <= 0:
            raise argparse.ArgumentTypeError(f"{text!r} must be positive")
        return value

    return parse


def _limits(args: argparse.Namespace) -> Limits:
    """The run's limits from the command line; a value out of range is named by its option."""
    try:
        return Limits(**{name: getattr(args, name) for name in OPTIONS})
    except ValueError as exc:
        message = str(exc)
        for name, (flag, _) in OPTIONS.items():
            message = message.replace(f"Limits.{name}", flag)
        raise ValueError(message) from None


def _limit_types() -> dict[str, object]:
    """The type of each ``Limits`` field the command line sets (``workers.limits.OPTIONS``)."""
    hints = get_type_hints(Limits)
    return {name: hints[name] for name in OPTIONS}


def build_parser() -> argparse.ArgumentParser:
    defaults, sandbox = Limits(), SandboxPolicy()
    parser = argparse.ArgumentParser(
        prog="python -m workers.cli",
        description="Run an agent image, sandboxed, on a split; write predictions and a report.",
    )
    parser.add_argument("--image", required=True, help="image tag or ID in the local engine")
    parser.add_argument("--split", required=True, type=Path, help="split directory")
    parser.add_argument(
        "--protocol",
        dest="benchmark",
        metavar="BENCHMARK",
        choices=names(),
        default=DEFAULT,
        help=f"the benchmark: {', '.join(names())} (default: {DEFAULT})",
    )
    parser.add_argument("--setting", default="", help="the setting to run (visual-rag)")
    parser.add_argument(
        "--task", required=True, help="the agent's task id (CRAG-MM: one of its three tasks)"
    )
    parser.add_argument("--corpus", type=Path, help="search corpus directory (enables search)")
    parser.add_argument("--out", required=True, type=Path, help="predictions JSONL (resumed)")
    parser.add_argument("--report", required=True, type=Path, help="run report JSON")
    limits = parser.add_argument_group("limits (defaults: the original challenge's)")
    for name, kind in _limit_types().items():
        flag, help_text = OPTIONS[name]
        default = getattr(defaults, name)
        described = (
            f"{help_text} (default: {option_text(default) if default is not None else 'none'})"
        )
        if get_origin(kind) is Literal:
            limits.add_argument(
                flag, dest=name, choices=get_args(kind), default=default, help=described
            )
        else:  # a number (Limits checks its range; an error names the option)
            number = int if int in (kind, *get_args(kind)) else float
            metavar = "S" if name.endswith("_s") else "N"
            limits.add_argument(
                flag,
                dest=name,
                type=_number(number),
                default=default,
                metavar=metavar,
                help=described,
            )
    box = parser.add_argument_group("sandbox")
    box.add_argument("--memory", type=parse_size, default=sandbox.memory_bytes, help="e.g. 16g")
    box.add_argument("--cpus", type=_positive(float), default=sandbox.cpus)
    box.add_argument("--gpus", help='"all" or device ids such as "0,1" (default: none)')
    box.add_argument(
        "--runtime",
        choices=RUNTIMES,
        help="the OCI runtime (default: runsc where the engine offers it and no GPU is given, "
        "else runc); one the engine lacks is an error",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    return parser


def _repair_torn_tail(path: Path) -> None:
    """Drop a last line cut short by a crash mid-write (its turn is simply asked again)."""
    if not path.exists() or path.stat().st_size == 0:
        return
    data = path.read_bytes()
    if not data.endswith(b"\n"):
        cut = data.rfind(b"\n") + 1
        with path.open("r+b") as handle:
            handle.truncate(cut)
        print(f"warning: {path}: dropped an incomplete last line", file=sys.stderr)


def _outcomes_path(out: Path) -> Path:
    return out.with_name(out.name + ".outcomes.jsonl")


def read_answered(
    out: Path, benchmark: SomeBenchmark, split: Any, known: set[str]
) -> dict[str, str]:
    """Items recorded by earlier runs into ``out``: key -> stored reply ("" when the item got
    no answer). ``known``: the run's item keys. Bad lines are an EvaluatorError naming file and
    line."""
    answered: dict[str, str] = {}
    outcomes = _outcomes_path(out)
    for path in (out, outcomes):
        _repair_torn_tail(path)
    if outcomes.exists():
        for line_no, line in enumerate(outcomes.read_text(encoding="utf-8").splitlines(), 1):
            try:
                record = json.loads(line)
                key = record["key"] if "key" in record else record["interaction_id"]
            except (ValueError, KeyError, TypeError):
                raise EvaluatorError(f"{outcomes}:{line_no}: not an outcome record") from None
            if key not in known:
                raise EvaluatorError(
                    f"{outcomes}:{line_no}: field 'key': {key!r} is not an item of this run "
                    "(outputs of another split or setting?)"
                )
            answered[key] = ""
    if out.exists() and out.stat().st_size:
        predictions, _ = benchmark.load_predictions(out, split)
        answered.update({k: benchmark.stored_reply(p) for k, p in predictions.items()})
    return answered


class PredictionWriter:
    """The sink of a CLI run: appends each batch's answers and outcomes, then fsyncs both."""

    def __init__(self, out: Path, progress: tqdm, benchmark: SomeBenchmark, split: Any) -> None:
        self.benchmark, self.split = benchmark, split
        out.parent.mkdir(parents=True, exist_ok=True)
        self.predictions: IO[str] = out.open("a", encoding="utf-8")
        self.outcomes: IO[str] = _outcomes_path(out).open("a", encoding="utf-8")
        self.progress = progress

    def __call__(self, results: list[ItemResult]) -> None:
        answers = [
            self.benchmark.prediction_record(self.split, r.key, r.response)
            for r in results
            if r.outcome == "answered"
        ]
        outcomes = [
            {
                "key": r.key,
                "group": r.group,
                "position": r.position,
                "outcome": r.outcome,
                "latency_s": round(r.latency_s, 6),
            }
            for r in results
        ]
        self._append(self.predictions, answers)
        self._append(self.outcomes, outcomes)
        self.progress.update(len(results))

    @staticmethod
    def _append(handle: IO[str], records: list[dict[str, Any]]) -> None:
        if records:
            handle.write("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
            handle.flush()
            os.fsync(handle.fileno())

    def close(self) -> None:
        self.predictions.close()
        self.outcomes.close()


def _search_process(corpus: Path) -> SearchProcess:
    from workers.search.engine import SearchEngine  # faiss: only when searching
    from workers.search.process import SearchProcess

    return SearchProcess(SearchEngine(corpus).spec)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        limits = _limits(args)
        policy = SandboxPolicy(
            memory_bytes=args.memory, cpus=args.cpus, gpus=args.gpus, runtime=args.runtime
        )
        benchmark = benchmark_class(args.benchmark)().for_setting(args.setting)
        split = benchmark.load_split(args.split)
        known = set(benchmark.split_keys(split))
        answered = read_answered(args.out, benchmark, split, known)
        plan = benchmark.agent_plan(split, args.task, answered)
        search = _search_process(args.corpus) if args.corpus else None
    except (ValueError, EvaluatorError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    progress = tqdm(
        total=len(known),
        initial=len(answered),
        unit=benchmark.unit.rstrip("s"),
        disable=args.no_progress,
        desc=f"{args.task} {args.split.name} {args.setting}".rstrip(),
    )
    writer = PredictionWriter(args.out, progress, benchmark, split)
    try:
        report = run_agent(
            args.image,
            plan,
            args.task,
            limits,
            writer,
            search=search,
            answered=answered,
            policy=policy,
        )
    except (ImageError, SearchUnavailable, RuntimeMissing) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"interrupted: run again with --out {args.out} to resume", file=sys.stderr)
        return 130
    finally:
        writer.close()
        progress.close()
        if search is not None:
            search.close()
    args.report.parent.mkdir(parents=True, exist_ok=True)
    args.report.write_text(json.dumps(report.to_dict(), indent=2) + "\n", encoding="utf-8")
    if report.status != "completed":
        print(f"run failed: {report.failure_reason}", file=sys.stderr)
        if report.agent_text:
            print(f"the agent sent: {report.agent_text[:2000]!r}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
