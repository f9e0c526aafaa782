"""A challenge's overall board on one split kind (``leaderboard.overall`` declares it): one line
per team from the counted tasks' stored boards, each task's rank and value beside the score.

It is made from the task boards as stored (``board_store.stored``, ``ranking.read_entries``):
their entry rules, tie rules, baselines and left-out submissions (hidden, disqualified) are
theirs, never decided again here; baselines have no rank and are no overall entry. It is
computed once per version of every counted split's results (``board_cache.across``), so a
view reads it from the cache until one of them changes.

Which boards a user may see is ``permissions.can_see_results`` of every counted split: the
overall board of a kind is shown only when each of its tasks' boards is.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

from leaderboard import board_cache, board_store, ranking
from leaderboard.models import Challenge, Split
from leaderboard.overall import AVERAGE_RANK, Counted, Overall

MISSING = {
    AVERAGE_RANK: "A team missing from a task's board counts as ranked after every team on "
    "that board (its number of teams plus one).",
    "mean": "A team needs an entry on every counted task to be ranked.",
}


@dataclass(frozen=True)
class Column:
    """A counted task's board: its split, setting and (mean) metric."""

    task_id: str
    task: str  # its name
    setting: str
    metric: str  # the metric the mean counts; the primary metric for average-rank
    metric_label: str


@dataclass(frozen=True)
class Cell:
    """A team's place on one counted board; ``run_id`` None: no entry there."""

    rank: int | None
    value: float | None  # the counted metric's value (mean), else the board's primary value
    run_id: int | None
    counted: float | None  # what the overall score takes from it (a rank, or the value)


@dataclass(frozen=True)
class Line:
    rank: int
    team_id: int
    team: str
    score: float
    cells: list[Cell]


@dataclass(frozen=True)
class OverallBoard:
    title: str
    method: str
    kind: str
    columns: list[Column]
    lines: list[Line]

    @property
    def missing(self) -> str:
        return MISSING[self.method]


def kinds(challenge: Challenge, overall: Overall) -> list[str]:
    """The split kinds every counted task has a current split of, in ``Split.Kind``'s order."""
    found = Split.objects.current().filter(task__challenge=challenge)
    have: dict[str, set[str]] = {}
    for task_id, kind in found.values_list("task__task_id", "kind"):
        have.setdefault(kind, set()).add(task_id)
    needed = {c.task_id for c in overall.counted}
    return [kind for kind in Split.Kind.values if needed <= have.get(kind, set())]


def splits(challenge: Challenge, overall: Overall, kind: str) -> list[Split]:
    """The counted tasks' current splits of ``kind``, in the counted order (with their tasks
    and challenge)."""
    found = Split.objects.current().filter(task__challenge=challenge, kind=kind)
    by_task = {s.task.task_id: s for s in found.select_related("task__challenge")}
    return [by_task[c.task_id] for c in overall.counted if c.task_id in by_task]


def board(overall: Overall, kind: str, splits_: Sequence[Split]) -> OverallBoard:
    """The overall board of ``kind`` over ``splits_`` (``splits``), computed once per version
    of their results and of the declaration."""
    return board_cache.across(
        splits_, "overall", [overall], lambda: compute(overall, kind, splits_)
    )


def compute(overall: Overall, kind: str, splits_: Sequence[Split]) -> OverallBoard:
    """The overall board ranked now from the stored task boards."""
    columns: list[Column] = []
    by_team: list[dict[int, ranking.Entry]] = []
    names: dict[int, str] = {}
    for counted, split in zip(overall.counted, splits_, strict=True):
        stored = board_store.stored(split, counted.setting)
        entries = ranking.read_entries(split, counted.setting, stored.runs, stored.places())
        teams = {e.team_id: e for e in entries if not e.is_baseline}
        names |= {team_id: e.team for team_id, e in teams.items()}
        by_team.append(teams)
        columns.append(_column(counted, split))
    cells: dict[int, list[Cell]] = {}
    for counted, teams in zip(overall.counted, by_team, strict=True):
        last = len(teams)
        for team_id in names:
            entry = teams.get(team_id)
            cells.setdefault(team_id, []).append(_cell(overall, counted, entry, last))
    scored = []
    for team_id, row in cells.items():
        if any(c.counted is None for c in row):  # mean: a task without the team's value
            continue
        total = sum((Fraction(c.counted or 0) for c in row), Fraction(0))
        scored.append((total / len(row), names[team_id], team_id, row))
    descending = not overall.lower_is_better
    scored.sort(key=lambda s: s[1])  # equal scores by team name
    scored.sort(key=lambda s: s[0], reverse=descending)
    ranks = ranking.ranks(((float(s[0]), False) for s in scored), shared=True)
    lines = [
        Line(rank or 0, team_id, name, float(score), row)
        for (score, name, team_id, row), rank in zip(scored, ranks, strict=True)
    ]
    return OverallBoard(overall.title, overall.method, kind, columns, lines)


def _column(counted: Counted, split: Split) -> Column:
    metric = split.task.declared().metric(counted.metric)
    return Column(counted.task_id, split.task.name, counted.setting, metric.name, metric.label)


def _cell(overall: Overall, counted: Counted, entry: ranking.Entry | None, last: int) -> Cell:
    if entry is None:
        missing_rank = float(last + 1) if overall.method == AVERAGE_RANK else None
        return Cell(None, None, None, missing_rank)
    if overall.method == AVERAGE_RANK:
        return Cell(entry.rank, entry.primary, entry.run_id, float(entry.rank or 0))
    value = entry.metrics.get(counted.metric)
    number = None if isinstance(value, bool) or not isinstance(value, int | float) else float(value)
    return Cell(entry.rank, number, entry.run_id, number)
