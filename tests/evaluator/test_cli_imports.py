"""What ``python -m evaluator`` imports to answer ``--help``: no benchmark it does not show, not
nltk (MRAG-Suite's ROUGE-L, through rouge-score: 1.7 s), not the OpenAI judge's HTTP client."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BENCHMARK = re.compile(r"evaluator\.benchmarks\.([a-z0-9_]+)")


def imported(*args: str) -> set[str]:
    """The modules ``python -m evaluator ARGS`` imports (read from ``-X importtime``)."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "evaluator", *args],
        cwd=REPO, capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    assert "usage: python -m evaluator" in done.stdout
    names = re.findall(r"^import time:\s+\d+ \|\s+\d+ \| +(\S+)$", done.stderr, re.MULTILINE)
    assert "evaluator.cli" in names  # the output was read
    return set(names)


def benchmarks_of(modules: set[str]) -> set[str]:
    return {match[1] for name in modules if (match := BENCHMARK.match(name))}


def test_the_help_imports_no_benchmark_nor_nltk() -> None:
    modules = imported("--help")
    assert not {name for name in modules if name.split(".")[0] in ("nltk", "rouge_score")}
    assert benchmarks_of(modules) == set()
    assert "aiohttp" not in modules and "evaluator.judges.openai_judge" not in modules


@pytest.mark.parametrize(("benchmark", "package"), [("mrag-suite", "mrag_suite"),
                                                    ("crag-mm", "crag_mm")])  # fmt: skip
def test_score_help_imports_only_the_benchmark_named(benchmark: str, package: str) -> None:
    modules = imported("score", "--protocol", benchmark, "--help")
    assert benchmarks_of(modules) == {package}
    assert "nltk" not in modules and "datasets" not in modules
