"""A benchmark's generated data, for the demo, the starter kit and the tests: ``Samples``."""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path
from typing import Generic, TypeVar

SplitT = TypeVar("SplitT")
# Podium's example agents (``examples/agents/<name>/``: a Dockerfile and its agent class).
EXAMPLE_AGENTS = Path(__file__).resolve().parents[2] / "examples" / "agents"


def example_agent_folder(name: str) -> Path:
    """The folder of Podium's example agent ``name`` (a built-in benchmark's
    ``example_agent``)."""
    return EXAMPLE_AGENTS / name


class Samples(ABC, Generic[SplitT]):
    """Sample splits and made-up predictions, generated (no download)."""

    @abstractmethod
    def write_sample(self, out_dir: str | Path, seed: int = 0) -> None:
        """Write the benchmark's generated sample data (``python -m evaluator sample``)."""

    @abstractmethod
    def write_sample_predictions(self, split: SplitT, path: str | Path, seed: int = 0) -> None:
        """Write made-up predictions for ``split`` (some right, some wrong, some "I don't
        know"): the conformance tests, the benchmarks' bench scripts and the demo use them."""

    def example_agent(self) -> Path | None:
        """The folder of an example agent that answers this benchmark (a challenge's starter
        kit carries it, with the commands to run it); None: the benchmark has none."""
        return None
