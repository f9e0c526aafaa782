"""The records every benchmark shares: what a judge is asked and answers, and the error of bad
input. Each benchmark's own records live in its benchmark package (CRAG-MM:
``evaluator.benchmarks.crag_mm.records``)."""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class JudgeRequest:
    """What a judge sees: the question, the ground truth and the (truncated) answer."""

    query: str
    ground_truth: str
    response: str
    # The stable key the benchmark gives the call (CRAG-MM: "turn/<interaction_id>"): it names
    # the call in transcripts; it is not part of the judgment cache's key.
    key: str = ""


@dataclass(frozen=True)
class Judgment:
    """A judge's decision on one request: a grade of its benchmark's rubric (CRAG-MM:
    ``correct`` / ``hallucinated``), or ``unjudged`` with the reason."""

    verdict: str
    judge_id: str  # e.g. "rules@1" or "openai:<model>@<revision>"
    prompt_version: str
    prompt_hash: str
    error: str | None = None  # why UNJUDGED
    raw: str | None = None  # the judge's raw answer, for audit


@dataclass(frozen=True)
class JudgeForecast:
    """The judge calls one submission's runs on a split will make, predicted before judging
    (``Benchmark.judge_forecast``), at most: the calls of each round (a round's calls go out
    together, the next round waits for them), and the answers they judge."""

    rounds: tuple[int, ...]
    answers: int

    @property
    def calls(self) -> int:
        return sum(self.rounds)

    @property
    def per_answer(self) -> float:
        return self.calls / self.answers if self.answers else 0.0

    def wall_s(self, concurrency: int, latency_s: float) -> float:
        """The least wall time at ``concurrency`` calls at once, each taking ``latency_s``:
        each round's calls in waves of ``concurrency``."""
        if concurrency < 1:
            raise ValueError(f"judge concurrency must be at least 1, got {concurrency}")
        return sum(math.ceil(calls / concurrency) * latency_s for calls in self.rounds)


class EvaluatorError(Exception):
    """Bad input (split, predictions, configuration): the message says what and where."""
