"""The judge contract: one async call per item, a grade that never raises for model trouble."""

from __future__ import annotations

import abc
from collections.abc import Callable
from typing import Any, Literal

from evaluator.judges.rubric import UNJUDGED
from evaluator.records import JudgeRequest, Judgment

# The OpenAI judge's structured-output modes (here, so that the CLI lists them without
# importing that judge's HTTP client)
StructuredMode = Literal["auto", "vllm", "openai", "none"]
STRUCTURED_MODES: tuple[str, ...] = ("auto", "vllm", "openai", "none")


class Judge(abc.ABC):
    """Grades an answer against the ground truth, on its benchmark's rubric
    (``evaluator.judges.rubric``).

    A judge that cannot decide (server down, time-out, off-menu answer) returns an UNJUDGED
    judgment with ``error`` set; it never raises for model trouble and never guesses "wrong".
    """

    judge_id: str  # "rules@<version>" or "openai:<model>@<revision>"
    prompt_version: str
    prompt_hash: str
    concurrency: int = 1  # how many requests the judge works on at once
    # Told of every call ``judge_all`` makes (seconds taken, the judgment): Podium's metrics.
    on_call: Callable[[float, Judgment], None] | None = None

    @abc.abstractmethod
    async def judge(self, request: JudgeRequest) -> Judgment:
        """Grade one item."""

    def verdict_settings(self) -> dict[str, Any]:
        """Settings beyond judge_id and the prompt that change a verdict (part of the cache key)."""
        return {}

    def transcript_request(self, request: JudgeRequest) -> dict[str, Any]:
        """What this judge is sent for ``request``, as a transcript records it."""
        return {
            "query": request.query,
            "ground_truth": request.ground_truth,
            "response": request.response,
        }

    async def aclose(self) -> None:  # noqa: B027 - judges without resources need no cleanup
        """Release network clients and other resources."""

    def judgment(
        self, verdict: str, *, error: str | None = None, raw: str | None = None
    ) -> Judgment:
        """A judgment stamped with this judge's identity and prompt."""
        return Judgment(
            verdict=verdict,
            judge_id=self.judge_id,
            prompt_version=self.prompt_version,
            prompt_hash=self.prompt_hash,
            error=error,
            raw=raw,
        )

    def unjudged(self, error: str, raw: str | None = None) -> Judgment:
        return self.judgment(UNJUDGED, error=error, raw=raw)
