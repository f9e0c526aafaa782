"""What a judge preview shows (``leaderboard.judge_preview``): the old and new boards side by
side, each team's rank change, Kendall's tau between the two rankings, the verdicts that
flipped, and how the two judges' verdicts pair up on each slice.

Both boards are ranked by the board's own ranking (``board_store.ranked``: the task's entry
rule, tie rule and order), on the runs' headlines with the previewed primary values put in
their place inside a savepoint that is always rolled back: nothing published changes, and
there is one ranking, not a copy of it.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from scipy.stats import kendalltau

from leaderboard import board_store
from leaderboard.audit_results import calibration_labels
from leaderboard.models import EvaluationRun, Headline, JudgePreview, PreviewFlip, Split
from leaderboard.models.results import primary_value

FLIPS_SHOWN = 200


@dataclass(frozen=True)
class Line:
    """A board line: rank (None: a baseline), the entry's team and run, its primary value."""

    rank: int | None
    team_id: int
    team: str
    method: str
    run_id: int
    primary: float | None


@dataclass(frozen=True)
class Move:
    """A team's place on both boards (None: not on that board); ``shift`` > 0: it climbs."""

    team: str
    old: Line | None
    new: Line | None

    @property
    def shift(self) -> int | None:
        if self.old is None or self.new is None or None in (self.old.rank, self.new.rank):
            return None
        return self.old.rank - self.new.rank  # type: ignore[operator]

    @property
    def entry_changed(self) -> bool:
        """The task's entry rule picks another of the team's runs under the new judge."""
        return self.old is not None and self.new is not None and self.old.run_id != self.new.run_id


@dataclass(frozen=True)
class BoardChange:
    setting: str
    old: list[Line]
    new: list[Line]
    moves: list[Move]
    tau: float | None  # Kendall's tau-b between the teams' two ranks; None under two teams
    p_value: float | None
    compared: int  # teams ranked on both boards

    @property
    def changed(self) -> int:
        return sum(1 for move in self.moves if move.shift)


@dataclass(frozen=True)
class SliceAgreement:
    """Two judges on one slice's items: how many, how many alike, and each pair of verdicts
    (old, new, count): the disagreements first, the most frequent first, then by name."""

    dimension: str
    value: str
    items: int
    agree: int
    pairs: list[tuple[str, str, int]]

    @property
    def agreement(self) -> float:
        return self.agree / self.items if self.items else 0.0


class _Discard(Exception):
    """Rolls the savepoint of ``ranked_with`` back."""


def ranked_with(
    split: Split, setting: str, primaries: Mapping[int, float | None]
) -> board_store.Ranked:
    """The board of ``split`` in ``setting`` as ranked if the runs of ``primaries`` had those
    primary values (the others keep theirs); nothing is written."""
    rows = [Headline(run_id=run_id, primary=value) for run_id, value in primaries.items()]
    try:
        with transaction.atomic():
            Headline.objects.bulk_update(rows, ["primary"], batch_size=1000)
            raise _Discard(board_store.ranked(split, setting))
    except _Discard as discarded:
        ranked: board_store.Ranked = discarded.args[0]
        return ranked


def kendall(old: list[int], new: list[int]) -> tuple[float | None, float | None]:
    """Kendall's tau-b (and its p-value) between two rankings of the same teams; None for
    fewer than two teams or a ranking where every team ties."""
    if len(old) < 2:
        return None, None
    result = kendalltau(old, new)
    tau, p_value = float(result.statistic), float(result.pvalue)
    return (None, None) if tau != tau else (tau, p_value)  # NaN: nothing to order


def moves(old: list[Line], new: list[Line]) -> list[Move]:
    """Each ranked team's place on both boards, in the new board's order (teams only on the
    old board last); baselines are not ranked and left out."""
    old_by_team = {line.team_id: line for line in old if line.rank is not None}
    new_by_team = {line.team_id: line for line in new if line.rank is not None}
    order = list(new_by_team) + [team for team in old_by_team if team not in new_by_team]
    return [
        Move(
            (new_by_team.get(team) or old_by_team[team]).team,
            old_by_team.get(team),
            new_by_team.get(team),
        )
        for team in order
    ]


def board_change(setting: str, old: list[Line], new: list[Line]) -> BoardChange:
    """The two boards of ``setting`` compared: rank changes and Kendall's tau."""
    team_moves = moves(old, new)
    both = [m for m in team_moves if m.old is not None and m.new is not None]
    tau, p_value = kendall([m.old.rank for m in both], [m.new.rank for m in both])  # type: ignore[union-attr,misc]
    return BoardChange(setting, old, new, team_moves, tau, p_value, len(both))


def board_changes(preview: JudgePreview) -> list[BoardChange]:
    """The old and new boards of each setting of the preview's task, compared: as they stood
    when it was published (``snapshot``), else ranked now."""
    if preview.published_boards:
        return [
            board_change(
                board["setting"],
                [Line(**line) for line in board["old"]],
                [Line(**line) for line in board["new"]],
            )
            for board in preview.published_boards
        ]
    split = preview.split
    task = split.task
    rows = list(preview.runs.values_list("run_id", "old_metrics", "new_metrics"))
    old = {run: primary_value(metrics, task.primary_metric) for run, metrics, _ in rows}
    new = {run: primary_value(metrics, task.primary_metric) for run, _, metrics in rows}
    changes = []
    for setting in task.run_settings():
        before, after = ranked_with(split, setting, old), ranked_with(split, setting, new)
        lines = _lines(before, old), _lines(after, new)
        changes.append(board_change(setting, *lines))
    return changes


def snapshot(changes: list[BoardChange]) -> list[dict[str, Any]]:
    """``changes`` as plain data (``JudgePreview.published_boards``)."""
    return [
        {
            "setting": change.setting,
            "old": [dataclasses.asdict(line) for line in change.old],
            "new": [dataclasses.asdict(line) for line in change.new],
        }
        for change in changes
    ]


def _lines(board: board_store.Ranked, primaries: Mapping[int, float | None]) -> list[Line]:
    teams = {
        run_id: (team_id, team, method)
        for run_id, team_id, team, method in EvaluationRun.objects.filter(
            pk__in=board.runs
        ).values_list(
            "pk", "submission__team_id", "submission__team__name", "submission__method_name"
        )
    }
    current = dict(Headline.objects.filter(run_id__in=board.runs).values_list("run_id", "primary"))
    return [
        Line(rank, *teams[run_id], run_id, primaries.get(run_id, current.get(run_id)))
        for run_id, rank in zip(board.runs, board.ranks, strict=True)
    ]


def agreement_table(
    pairs: Iterable[Mapping[str, Mapping[str, Mapping[str, int]]]],
) -> list[SliceAgreement]:
    """Per slice (dimension, value), the two judges' verdict pairs summed over runs (each run's
    ``PreviewRun.pairs``: dimension -> value -> "old|new" -> count), the whole (``all``) first,
    then each dimension's values by increasing agreement."""
    summed: dict[tuple[str, str], Counter[tuple[str, str]]] = {}
    for by_dimension in pairs:
        for dimension, by_value in by_dimension.items():
            for value, counts in by_value.items():
                total = summed.setdefault((dimension, value), Counter())
                for pair, count in counts.items():
                    old, _, new = pair.partition("|")
                    total[(old, new)] += count
    table = []
    for (dimension, value), verdicts in summed.items():
        ordered = sorted(
            verdicts.items(), key=lambda item: (item[0][0] == item[0][1], -item[1], item[0])
        )
        table.append(
            SliceAgreement(
                dimension, value, sum(verdicts.values()),
                sum(n for (old, new), n in verdicts.items() if old == new),
                [(old, new, n) for (old, new), n in ordered],
            )
        )  # fmt: skip
    return sorted(table, key=lambda s: (s.dimension != "all", s.dimension, s.agreement, s.value))


def human_labels(answer_ids: Iterable[int]) -> dict[int, str]:
    """The calibration set's human label of each answer that has one: the judge audits' labels
    (``audit_results.calibration_labels``, ``docs/judge-audit.md``)."""
    return calibration_labels(answer_ids)


def flipped(preview: JudgePreview, limit: int = FLIPS_SHOWN) -> list[PreviewFlip]:
    """The first ``limit`` flipped verdicts, each with its team and, where the calibration
    set has one, the human label (``human_label``)."""
    flips = list(
        preview.flips.select_related("answer__run__submission__team").order_by(
            "answer__run_id", "answer__group", "answer__position"
        )[:limit]
    )
    labels = human_labels(flip.answer_id for flip in flips)
    for flip in flips:
        flip.human_label = labels.get(flip.answer_id, "")  # type: ignore[attr-defined]
    return flips
