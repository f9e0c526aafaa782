"""M2RAG for people: the CLI's summary and a paired comparison's lines."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from evaluator.benchmarks.m2rag.metrics import METRICS
from evaluator.benchmarks.m2rag.record import GradedAnswer
from evaluator.notices import judge_notices


def _x100(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.1f}"


def summary(document: Mapping[str, Any], graded: Sequence[GradedAnswer]) -> str:
    judge, block = document["judge"], document["all"]
    calls = document.get("judge_calls", {})
    lines = [
        f"protocol m2rag  judge {judge['id']} ({judge['kind']}, prompt {judge['prompt_version']})"
        f"  parsing {document.get('parsing', 'official')}",
        f"{block['count']} answers ({block['failed']} failed, counted 0), {block['images']} "
        f"placed images; judge calls: {calls.get('predicted', 0)} predicted, "
        f"{calls.get('asked', 0)} asked, {calls.get('made', 0)} made (not cached)",
        f"{'metric':<18} {'podium':>7} {'skip':>7}   (x100; skip: the official figure, failed "
        "answers left out)",
    ]
    skip = block.get("skip") or {}
    for name in (*METRICS, "overall"):
        lines.append(f"{name:<18} {_x100(block.get(name)):>7} {_x100(skip.get(name)):>7}")
    if block.get("overall_ci95"):
        low, high = block["overall_ci95"]
        lines.append(f"overall 95% CI [{low * 100:.1f}, {high * 100:.1f}] (bootstrap over answers)")
    notices = judge_notices(document, (item.judge_error for item in graded), "answers", "scores")
    return "\n".join([*lines, "", *notices]).rstrip() + "\n"


def format_comparison(result: Mapping[str, Any], a_name: str, b_name: str) -> str:
    low, high = result["difference_ci95"]
    verdict = (
        f"separable: {a_name if result['difference'] > 0 else b_name} scores higher"
        if result["separable"]
        else "not separable at the 95% level"
    )
    return "\n".join([
        f"Overall per answer ({result['items']} answers, failed = 0)",
        f"  {a_name}: {result['a']:.4f}", f"  {b_name}: {result['b']:.4f}",
        f"  difference: {result['difference']:+.4f} (95% CI [{low:+.4f}, {high:+.4f}])",
        f"  paired sign-flip test: p = {result['p_value']:.4f}", f"  {verdict}",
    ])  # fmt: skip
