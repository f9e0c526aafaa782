"""A leaderboard line as pages, exports and the API read it (``leaderboard.ranking`` reads
them from stored rows; ``leaderboard.slices`` lays them out by slice)."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, NamedTuple

# What a leaderboard line reads, and nothing more (pages list thousands of entries); the order
# of ``Entry``'s fields after ``rank``.
ENTRY_FIELDS = (
    "run_id", "run__submission_id", "run__submission__team_id", "run__submission__team__name",
    "run__submission__method_name", "run__submission__is_baseline",
    "run__submission__paper_url", "run__submission__code_url", "run__submission__created_at",
    "run__judge_id", "run__scores_complete", "run__unjudged_items",
    "count", "primary", "primary_ci_low", "primary_ci_high", "metrics_json",
)  # fmt: skip


class Place(NamedTuple):
    """Where an entry stands on its board: its rank (None: a baseline), the range of ranks it
    takes in the board's bootstrap and its group of entries the board cannot tell apart (None:
    none computed; ``leaderboard.board_statistics``)."""

    rank: int | None
    rank_low: int | None = None
    rank_high: int | None = None
    group: int | None = None
    calibrated: float | None = None  # the score calibrated by people's labels, its interval
    calibrated_low: float | None = None
    calibrated_high: float | None = None
    laddered: bool = False  # the Ladder publishes only ``released`` (``leaderboard.public_board``)
    released: float | None = None
    # its repeated runs' statistics or how many are done; None: not repeated
    repeated: dict[str, Any] | None = None  # ``leaderboard.repeats``


class Entry(NamedTuple):
    """One leaderboard line: a run's headline scores as plain values; ``rank`` is None for
    baselines. Plain values keep thousands of entries cheap to build, cache and render."""

    rank: int | None
    run_id: int
    submission_id: int
    team_id: int
    team: str
    method_name: str
    is_baseline: bool
    paper_url: str
    code_url: str
    submitted_at: datetime
    judge_id: str
    complete: bool
    unjudged: int
    count: int  # type: ignore[assignment]  # items behind the scores; shadows tuple.count
    primary: float | None
    primary_ci_low: float | None
    primary_ci_high: float | None
    metrics_json: str  # every metric of the run's headline block, as stored (JSON)
    rank_low: int | None = None  # the rank interval and group beside the rank (``Place``)
    rank_high: int | None = None
    group: int | None = None
    calibrated: float | None = None  # ``Place``'s
    calibrated_low: float | None = None
    calibrated_high: float | None = None
    laddered: bool = False  # ``Place``'s
    released: float | None = None
    repeated: dict[str, Any] | None = None  # ``Place``'s

    def released_only(self, primary: str) -> Entry:
        """A laddered entry as anyone reads it: its released score as the primary ``primary``,
        and nothing else of its scores (no interval, other metric, rank interval, group nor
        calibrated score): each is a function of the raw score the Ladder keeps back."""
        return self._replace(
            primary=self.released,
            primary_ci_low=None,
            primary_ci_high=None,
            metrics_json=json.dumps({primary: self.released}),
            rank_low=None,
            rank_high=None,
            group=None,
            calibrated=None,
            calibrated_low=None,
            calibrated_high=None,
            repeated=None,
        )

    @property
    def metrics(self) -> dict[str, Any]:
        """Every metric of the run's headline block, by name: decoded on each access (a page
        decodes its own entries', not the whole board's)."""
        metrics: dict[str, Any] = json.loads(self.metrics_json)
        return metrics

    def record(self) -> dict[str, Any]:
        """The entry as plain data: the one shape for exports and the API."""
        record: dict[str, Any] = {
            name: getattr(self, name)
            for name in (
                "rank", "team", "method_name", "is_baseline", "paper_url", "code_url",
                "submission_id", "run_id", "judge_id", "complete", "count", "primary",
            )
        }  # fmt: skip
        record["submitted_at"] = self.submitted_at.isoformat()
        record["primary_ci95"] = [self.primary_ci_low, self.primary_ci_high]
        record["rank_ci95"] = [self.rank_low, self.rank_high]
        record["group"] = self.group
        record["calibrated"] = (
            None
            if self.calibrated is None
            else {"value": self.calibrated, "ci95": [self.calibrated_low, self.calibrated_high]}
        )
        record["repeated"] = self.repeated
        record["metrics"] = self.metrics
        record["laddered"] = self.laddered  # primary is the Ladder's released score
        return record
