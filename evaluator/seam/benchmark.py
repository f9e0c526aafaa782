"""A benchmark, as Podium holds it: one class (in its own package under
``evaluator/benchmarks/``, or installed as a plugin) implementing the seam's interfaces.

Each part of Podium asks for the narrowest interface it needs:

- ``Splits``: the name, the settings, reading a split (everything builds on it);
- ``Grading``: predictions, grading, the per-item table;
- ``Scoring``: declared metrics, a typed ``Score``, a typed paired ``Comparison``;
- ``Runs``: the agent plan the runner follows and the answers it stores;
- ``Pages``: what pages and the CLI show;
- ``Samples``: generated splits, made-up predictions, an example agent;
- ``Options``: the benchmark's options on ``python -m evaluator``.

``docs/benchmark-seam.md`` says how to add one; ``evaluator.benchmarks`` is the registry.
"""

from __future__ import annotations

from typing import Generic, TypeVar

from evaluator.seam.grading import Grading
from evaluator.seam.options import Options
from evaluator.seam.pages import Pages
from evaluator.seam.runs import Runs
from evaluator.seam.samples import Samples
from evaluator.seam.scoring import Scoring
from evaluator.seam.splits import Splits

SplitT = TypeVar("SplitT")
PredictionT = TypeVar("PredictionT")
ItemT = TypeVar("ItemT")


class Benchmark(
    Splits[SplitT],
    Grading[SplitT, PredictionT, ItemT],
    Scoring[ItemT],
    Runs[SplitT, PredictionT],
    Pages[SplitT, ItemT],
    Samples[SplitT],
    Options,
    Generic[SplitT, PredictionT, ItemT],
):
    """Everything one benchmark provides (what its package's ``BENCHMARK`` is)."""
