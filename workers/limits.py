"""Per-task time and size limits of a run (the defaults are the original challenge's), and the
search process's own limits."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from agentkit.protocol import MAX_BATCH_SIZE, clip_batch_size

TimeoutPolicy = Literal["missing", "fail"]
ErrorPolicy = Literal["continue", "abort"]


@dataclass(frozen=True)
class Limits:
    readiness_s: float = 600.0  # start-up (model loading) until /ready says ready
    per_item_s: float = 10.0  # a batch call gets per_item_s x the agent's batch size
    max_batch_size: int = MAX_BATCH_SIZE  # the agent's own choice is clipped to 1..this
    total_wall_s: float | None = None  # whole run, start-up included; None: no limit
    max_consecutive_timeouts: int = 3  # timed-out batches in a row before a restart
    max_restarts: int = 3  # more restarts than this is a crash loop: the run fails
    answer_cap_bytes: int = 64 * 1024  # longer answers are cut (UTF-8 bytes)
    timeout_policy: TimeoutPolicy = "missing"  # "missing": record and go on; "fail": end run
    # the agent raised on a batch (HTTP 5xx): "abort": the run fails, as the official evaluation
    # (and a task's default); "continue": its items are errors, the run goes on
    error_policy: ErrorPolicy = "abort"
    searches_per_item: int = 20  # search.sock requests a batch may make, per item in it

    def __post_init__(self) -> None:
        positive = (
            "readiness_s",
            "per_item_s",
            "max_consecutive_timeouts",
            "answer_cap_bytes",
            "searches_per_item",
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
        if self.error_policy not in ("continue", "abort"):
            raise ValueError(
                f"Limits.error_policy must be 'continue' or 'abort', got {self.error_policy!r}"
            )

    def batch_size(self, requested: int) -> int:
        """The batch size a run uses for an agent asking for ``requested``."""
        return min(clip_batch_size(requested), self.max_batch_size)

    def batch_deadline_s(self, batch_size: int) -> float:
        """A batch call's time: ``per_item_s`` x the agent's batch size (the official rule:
        10 s x ``get_batch_size()``, however many items the call holds)."""
        return self.per_item_s * batch_size


# The limits a user sets on the runner's command line (``python -m workers.cli``), each field
# with its option and help: the CLI's arguments and the starter kit's commands (``as_options``)
# both come from this one list.
OPTIONS: dict[str, tuple[str, str]] = {
    "max_batch_size": ("--batch-size-max", "the agent's batch size is clipped to this"),
    "per_item_s": ("--per-turn-s", "a batch call's time per item of the agent's batch size"),
    "readiness_s": ("--readiness-s", "start-up time until /ready says ready"),
    "total_wall_s": ("--total-s", "total wall time of the run"),
    "timeout_policy": ("--timeout-policy", "a timed-out batch: scored missing, or the run fails"),
    "error_policy": ("--error-policy", "an agent error: the run fails (abort) or goes on"),
    "max_restarts": ("--max-restarts", "restarts of a crashed agent before the run fails"),
    "max_consecutive_timeouts": ("--max-consecutive-timeouts", "timeouts in a row: restart"),
}


def as_options(limits: Limits, names: Iterable[str] = OPTIONS) -> list[str]:
    """``limits``' fields ``names`` as ``python -m workers.cli`` options ("--per-turn-s 10",
    ...), in the order of ``OPTIONS``; a limit that is None (no total time) is left out."""
    chosen = set(names)
    values = ((name, getattr(limits, name)) for name in OPTIONS if name in chosen)
    return [
        f"{OPTIONS[name][0]} {option_text(value)}" for name, value in values if value is not None
    ]


def option_text(value: object) -> str:
    """A limit's value as an option writes it: 600.0 as 600."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


MEMORY_ENV = "PODIUM_SEARCH_MEMORY_BYTES"
CPUS_ENV = "PODIUM_SEARCH_CPUS"
NICE_ENV = "PODIUM_SEARCH_NICE"
DEFAULT_MEMORY_BYTES = 4 * 1024**3  # an engine over the sample corpus maps about 2 GiB of data
# torch's encoders need this much: MiniLM failed under 1 GiB on the CPU and as CUDA started, and
# 256 MiB did not import torch (bench/text_encoder.py --under-search-limits)
LEAST_MEMORY_BYTES = 2 * 1024**3
DEFAULT_CPUS = 1.0
DEFAULT_NICE = 10


@dataclass(frozen=True)
class SearchLimits:
    """The search process's own limits (``workers.search.process``)."""

    memory_bytes: int = DEFAULT_MEMORY_BYTES
    cpus: float = DEFAULT_CPUS
    nice: int = DEFAULT_NICE

    @classmethod
    def from_environment(cls) -> SearchLimits:
        return cls(
            memory_bytes=int(
                _env_number(MEMORY_ENV, DEFAULT_MEMORY_BYTES, LEAST_MEMORY_BYTES, int)
            ),
            cpus=_env_number(CPUS_ENV, DEFAULT_CPUS, 0.01, float),
            nice=int(_env_number(NICE_ENV, DEFAULT_NICE, 0, int)),
        )


def _env_number(name: str, default: float, least: float, kind: type[int] | type[float]) -> float:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = kind(raw)
    except ValueError:
        what = "a whole number" if kind is int else "a number"
        raise ValueError(f"{name}={raw!r} is not {what}") from None
    if value < least:
        raise ValueError(f"{name}={value} is below the least allowed, {least}")
    return value
