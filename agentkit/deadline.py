"""The time left for the batch being answered, for agents that want to budget their work.

Podium sends each batch with its deadline (``deadline_s``); agentkit records it before calling
the agent. Podium enforces the limit whatever the agent does; this is only information.
"""

from __future__ import annotations

import time

_deadline: float | None = None  # time.monotonic() value; None outside a batch or when unlimited


def remaining_time() -> float | None:
    """Seconds left for the current batch (may be negative), or None when there is no limit."""
    return None if _deadline is None else _deadline - time.monotonic()


def start_batch(deadline_at: float | None) -> None:
    """Record the deadline (a ``time.monotonic()`` value) of the batch about to be answered."""
    global _deadline
    _deadline = deadline_at


def end_batch() -> None:
    global _deadline
    _deadline = None
