"""A run's output directory, read back for comparisons (the notices every summary carries:
``evaluator.notices``).

``DIR/<table>.jsonl`` and ``DIR/<table>.csv``: the per-item table (the benchmark's columns, then
extra label columns; CRAG-MM's table is ``turns``, Visual-RAG's ``queries``).
``DIR/scores.json``: the benchmark, the judge (id, prompt version and hash, kind), the
benchmark's settings, the seed, completeness, warnings, and the scores.
"""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evaluator.benchmarks import get_benchmark
from evaluator.jsonl import json_objects
from evaluator.judges.base import Judge
from evaluator.judges.transcript import WRITTEN
from evaluator.notices import judge_notices as judge_notices  # plugins import it from here too
from evaluator.records import EvaluatorError

if TYPE_CHECKING:
    from evaluator.seam import SomeBenchmark

SCORES_JSON = "scores.json"
RULES_PREFIX = "rules"


def judge_record(judge: Judge) -> dict[str, str]:
    """The judge as scores.json names it; ``kind`` says whether an LLM made the verdicts
    (``llm``), deterministic rules (``rules``) or a transcript naming no judge (``written``)."""
    kind = "rules" if judge.judge_id.split("@")[0] == RULES_PREFIX else "llm"
    if judge.judge_id == WRITTEN[0]:
        kind = "written"
    return {
        "id": judge.judge_id,
        "prompt_version": judge.prompt_version,
        "prompt_hash": judge.prompt_hash,
        "kind": kind,
    }


def scores_document(
    benchmark: SomeBenchmark,
    scores: Mapping[str, Any],
    judge: Judge,
    warnings: Sequence[str],
    seed: int,
) -> dict[str, Any]:
    """scores.json: the run's provenance first, then the benchmark's scores."""
    head = {
        "protocol": benchmark.name,
        "judge": judge_record(judge),
        **benchmark.settings(),
        "seed": seed,
    }
    rest = {key: value for key, value in scores.items() if key not in head}
    return head | {"warnings": list(warnings)} | rest


def _write_atomically(path: Path, text: str) -> None:
    partial = path.with_name(path.name + ".partial")
    partial.write_text(text, encoding="utf-8", newline="")
    os.replace(partial, path)


def write_report(
    out_dir: str | Path,
    benchmark: SomeBenchmark,
    graded: Sequence[Any],
    document: Mapping[str, Any],
) -> Path:
    """Write <table>.jsonl, <table>.csv and scores.json into ``out_dir`` (created if needed)."""
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
        rows = [benchmark.to_row(item) for item in graded]
        header = list(benchmark.columns)
        header += sorted({key for row in rows for key in row} - set(header))
        table = io.StringIO()
        writer = csv.DictWriter(table, fieldnames=header, restval="", lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
        _write_atomically(out / f"{benchmark.table}.csv", table.getvalue())
        lines = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
        _write_atomically(out / f"{benchmark.table}.jsonl", lines)
        _write_atomically(
            out / SCORES_JSON, json.dumps(document, indent=2, ensure_ascii=False) + "\n"
        )
    except OSError as exc:
        raise EvaluatorError(f"output {out}: cannot write: {exc}") from exc
    return out


def read_scores(run_dir: str | Path) -> dict[str, Any]:
    """``run_dir/scores.json``, checked to be a scores document."""
    path = Path(run_dir) / SCORES_JSON
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise EvaluatorError(f"{path}: not found (is {run_dir} a scored run?)") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise EvaluatorError(f"{path}: cannot read: {exc}") from exc
    except json.JSONDecodeError as exc:
        raise EvaluatorError(f"{path}:{exc.lineno}: invalid JSON: {exc.msg}") from None
    if not isinstance(document, dict) or not isinstance(document.get("protocol"), str):
        raise EvaluatorError(f"{path}: field 'protocol': missing (not a scores.json)")
    return document


def read_items(run_dir: str | Path) -> list[Any]:
    """The graded items of a run, read back from its table by its benchmark."""
    benchmark = get_benchmark(read_scores(run_dir)["protocol"])
    path = Path(run_dir) / f"{benchmark.table}.jsonl"
    if not path.is_file():
        raise EvaluatorError(f"{path}: not found (is {run_dir} a scored run?)")
    return [benchmark.from_row(row, where) for where, row in json_objects(path)]
