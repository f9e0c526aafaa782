"""Per-task time and size limits of a run; the defaults are the original challenge's."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from agentkit.protocol import MAX_BATCH_SIZE, clip_batch_size

TimeoutPolicy = Literal["missing", "fail"]


@dataclass(frozen=True)
class Limits:
    readiness_s: float = 600.0  # start-up (model loading) until /ready says ready
    per_turn_s: float = 10.0  # a batch call gets per_turn_s x its number of turns
    max_batch_size: int = MAX_BATCH_SIZE  # the agent's own choice is clipped to 1..this
    total_wall_s: float | None = None  # whole run, start-up included; None: no limit
    max_consecutive_timeouts: int = 3  # timed-out batches in a row before a restart
    max_restarts: int = 3  # more restarts than this is a crash loop: the run fails
    answer_cap_bytes: int = 64 * 1024  # longer answers are cut (UTF-8 bytes)
    timeout_policy: TimeoutPolicy = "missing"  # "missing": record and go on; "fail": end run
    searches_per_turn: int = 20  # search.sock requests a batch may make, per turn in it

    def __post_init__(self) -> None:
        positive = (
            "readiness_s",
            "per_turn_s",
            "max_consecutive_timeouts",
            "answer_cap_bytes",
            "searches_per_turn",
        )
        for name in positive:
            if getattr(self, name) <= 0:
                raise ValueError(f"Limits.{name} must be positive, got {getattr(self, name)}")
        if self.max_restarts < 0:
            raise ValueError(f"Limits.max_restarts must be >= 0, got {self.max_restarts}")
        if self.total_wall_s is not None and self.total_wall_s <= 0:
            raise ValueError(f"Limits.total_wall_s must be positive, got {self.total_wall_s}")
        if clip_batch_size(self.max_batch_size) != self.max_batch_size:
            raise ValueError(f"Limits.max_batch_size must be 1..{MAX_BATCH_SIZE}")
        if self.timeout_policy not in ("missing", "fail"):
            raise ValueError(
                f"Limits.timeout_policy must be 'missing' or 'fail', got {self.timeout_policy!r}"
            )

    def batch_size(self, requested: int) -> int:
        """The batch size a run uses for an agent asking for ``requested``."""
        return min(clip_batch_size(requested), self.max_batch_size)

    def batch_deadline_s(self, turns: int) -> float:
        return self.per_turn_s * turns
