"""What a run produces: one ``TurnResult`` per turn (sent to the sink as it arrives) and a
``RunReport`` at the end. Reasons are written by Podium for the participant and never carry a
query, an answer or any byte the agent sent (an agent could echo the split's queries there):
what the agent said behind a failure is kept apart, in ``agent_text``."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Literal

from workers.faults import TeamFault, TransientFault

Outcome = Literal["answered", "timeout", "error"]
AGENT_TEXT_CHARS = 64 * 1024  # of the agent's own words kept behind a failure, for operators


@dataclass(frozen=True)
class TurnResult:
    session_id: str
    interaction_id: str
    turn_idx: int
    response: str  # capped and valid UTF-8; empty unless answered
    outcome: Outcome
    latency_s: float  # wall time of the batch call that carried this turn


@dataclass(frozen=True)
class TurnOutcome:
    interaction_id: str
    outcome: Outcome
    latency_s: float


@dataclass
class RunReport:
    status: Literal["completed", "failed"]
    failure_reason: str | None
    image: str
    image_digest: str
    task: str
    batch_size: int | None = None
    kit: str | None = None
    restarts: int = 0
    start_to_ready_s: float | None = None  # first start of the container until ready
    total_s: float = 0.0
    turns: list[TurnOutcome] = field(default_factory=list)  # this run's turns, in order asked
    resumed_turns: int = 0  # answered by an earlier run, not asked again
    agent_log: str = ""  # tail of the agent's stdout+stderr, all its containers, 64 KiB at most
    agent_text: str = ""  # the agent's own words behind ``failure_reason`` (never part of it)

    def counts(self) -> dict[str, int]:
        totals = {"answered": 0, "timeout": 0, "error": 0}
        for turn in self.turns:
            totals[turn.outcome] += 1
        return totals

    def to_dict(self) -> dict:
        data = asdict(self)
        data["counts"] = self.counts()
        return data


def clean_answer(text: str, cap_bytes: int) -> str:
    """Valid UTF-8 without NUL, at most ``cap_bytes`` bytes, cut on a character boundary."""
    data = text.replace("\x00", "\ufffd").encode("utf-8", errors="replace")
    return data[:cap_bytes].decode("utf-8", errors="ignore")


class RunFailed(TeamFault):
    """Ends a run; ``str(exc)`` is the participant-readable reason, in Podium's words only;
    ``agent_text`` is what the agent said behind it (shown quoted for public splits only)."""

    def __init__(self, reason: str, agent_text: str = "") -> None:
        super().__init__(reason)
        self.agent_text = agent_text[:AGENT_TEXT_CHARS]


class SearchUnavailable(TransientFault):
    """The search process (``workers.search.process``) failed or stopped: Podium's fault, never
    the agent's; the run stops rather than go on with searches failing."""
