"""What a run produces: one ``ItemResult`` per item (sent to the sink as it arrives) and a
``RunReport`` at the end. Reasons are written by Podium for the participant and never carry a
query, an answer or any byte the agent sent (an agent could echo the split's queries there):
what the agent said behind a failure is kept apart, in ``agent_text``."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from workers.faults import TeamFault, TransientFault

# answered; timed out; the agent raised (HTTP 5xx); the reply broke the benchmark's schema for
# this item (``ItemResult.problem`` says how, in Podium's words)
Outcome = Literal["answered", "timeout", "error", "invalid"]
AGENT_TEXT_CHARS = 64 * 1024  # of the agent's own words kept behind a failure, for operators


@dataclass(frozen=True)
class ItemResult:
    key: str  # the benchmark's item key (CRAG-MM: the interaction id)
    group: str  # where it sits (``AgentPlan.place``: a session, a setting)
    position: int
    response: str  # as the benchmark stores it (``AgentPlan.read_replies``); empty unless answered
    outcome: Outcome
    latency_s: float  # wall time of the batch call that carried this item
    problem: str | None = None  # an invalid reply: what was wrong, in Podium's words


@dataclass(frozen=True)
class ItemOutcome:
    key: str
    outcome: Outcome
    latency_s: float


@dataclass
class RunReport:
    status: Literal["completed", "failed"]
    failure_reason: str | None
    image: str
    image_digest: str
    task: str
    runtime: str = ""  # the OCI runtime its containers ran under (workers.runtimes)
    batch_size: int | None = None
    kit: str | None = None
    restarts: int = 0
    start_to_ready_s: float | None = None  # first start of the container until ready
    total_s: float = 0.0
    items: list[ItemOutcome] = field(default_factory=list)  # this run's items, in order asked
    resumed_items: int = 0  # answered by an earlier run, not asked again
    agent_log: str = ""  # tail of the agent's stdout+stderr, all its containers, 64 KiB at most
    agent_text: str = ""  # the agent's own words behind ``failure_reason`` (never part of it)

    def counts(self) -> dict[str, int]:
        totals = {"answered": 0, "timeout": 0, "error": 0, "invalid": 0}
        for item in self.items:
            totals[item.outcome] += 1
        return totals

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["counts"] = self.counts()
        return data


class RunFailed(TeamFault):
    """Ends a run; ``str(exc)`` is the participant-readable reason, in Podium's words only;
    ``agent_text`` is what the agent said behind it (shown quoted for public splits only)."""

    def __init__(self, reason: str, agent_text: str = "") -> None:
        super().__init__(reason)
        self.agent_text = agent_text[:AGENT_TEXT_CHARS]


class SearchUnavailable(TransientFault):
    """The search process (``workers.search.process``) failed or stopped: Podium's fault, never
    the agent's; the run stops rather than go on with searches failing."""
