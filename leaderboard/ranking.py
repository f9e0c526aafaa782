"""Ranking leaderboards and reading their entries from stored rows: entries, slices,
comparisons.

A board is ranked in one query (``narrow_board_rows``: runs' ``Headline`` rows, one per team
chosen in SQL with a window function, in the board's order) and ``ranks``, when the split's
results change (``leaderboard.board_store`` stores the result); pages read the ranked runs'
wide rows (``read_entries``) and a slice dimension's rows, one query each, whatever the number
of entries. Nothing here computes a metric.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import Case, F, QuerySet, TextField, Value, When
from django.db.models.expressions import OrderBy, Window
from django.db.models.functions import Cast, RowNumber

from evaluator.seam import Metric
from leaderboard.entries import ENTRY_FIELDS, Entry, Place
from leaderboard.models import EntryComparison, EvaluationRun, Headline, Split, Submission, Task
from leaderboard.slices import SliceCell, SliceTable, entry_slices, slice_table

# what pages read beside a board, here as before
__all__ = [
    "ENTRY_FIELDS",
    "Entry",
    "Place",
    "SliceCell",
    "SliceTable",
    "entry_slices",
    "slice_table",
]

BASELINE = "run__submission__is_baseline"


def columns(
    task: Task, setting: str = "", split: Split | None = None, raw: bool = False
) -> list[Metric]:
    """The leaderboard's metric columns in ``setting``: the primary metric first, then the
    benchmark's other headline metrics that runs of that setting have, in its order; on
    ``split``, only those that mean something there (``Benchmark.on_board``: no multi-turn
    columns on a single-turn split); the primary metric alone where the Ladder publishes the
    split's scores, unless ``raw`` (the organisers' raw board)."""
    benchmark = task.declared()
    metrics = [
        m
        for m in benchmark.metrics
        if benchmark.in_setting(m, setting)
        and (
            split is None
            or m.name == task.primary_metric
            or benchmark.on_board(m, split.groups, split.items)
        )
    ]
    primary = [m for m in metrics if m.name == task.primary_metric]
    if split is not None and not raw and laddered(split):  # it publishes the primary alone
        return primary
    return primary + [m for m in metrics if m.headline and m.name != task.primary_metric]


def laddered(split: Split) -> bool:
    """Whether the Ladder publishes ``split``'s scores (``leaderboard.public_board``)."""
    threshold = split.task.challenge.ladder_threshold
    return split.kind == Split.Kind.PUBLIC_TEST and threshold is not None


def by_score(scores: Sequence[float | None], descending: bool) -> list[int]:
    """The positions of ``scores`` in the board's order by them: the best first (None last),
    equal scores in their order here."""
    present = [(s, i) for i, s in enumerate(scores) if s is not None]
    present.sort(key=lambda pair: -pair[0] if descending else pair[0])
    return [i for _, i in present] + [i for i, s in enumerate(scores) if s is None]


def descending(task: Task) -> bool:
    """Whether a larger primary value ranks first."""
    return all(m.higher_is_better for m in task.declared().metrics if m.name == task.primary_metric)


def _by_primary(task: Task) -> OrderBy:
    return (
        F("primary").desc(nulls_last=True)
        if descending(task)
        else F("primary").asc(nulls_last=True)
    )


def _team_order(task: Task) -> list[OrderBy]:
    metric = _by_primary(task)
    oldest_first = F("run__submission__created_at").asc()
    if task.entry_rule == Task.EntryRule.LATEST:
        return [F("run__submission__created_at").desc()]
    if task.entry_rule == Task.EntryRule.CHOSEN:
        return [F("run__submission__chosen_for_final").desc(), metric, oldest_first]
    return [metric, oldest_first]


def _headline_rows(
    split: Split, setting: str | None, before: datetime | None = None
) -> QuerySet[Headline]:
    """The finished runs' headlines on ``split``: in ``setting``, or in every one (None); of
    submissions made ``before`` then only (a frozen board: ``leaderboard.public_board``)."""
    # the run's split too: the planner then reads only this split's runs
    rows = Headline.objects.filter(
        split=split,
        run__split=split,
        run__state=EvaluationRun.State.DONE,
        run__submission__standing=Submission.Standing.SHOWN,  # not hidden nor disqualified
        run__trial=0,  # a submission's own run; its repeats rank nowhere (``leaderboard.repeats``)
    )
    if before is not None:
        rows = rows.filter(run__submission__created_at__lt=before)
    return rows if setting is None else rows.filter(setting=setting)


def _picked(split: Split, setting: str, before: datetime | None) -> QuerySet[Headline]:
    """The headlines of the board's entries: one per team by the task's rule, every baseline."""
    # Each baseline is its own group; other entries are grouped by team.
    group = Case(
        When(run__submission__is_baseline=True, then=F("run__submission_id")), default=Value(0)
    )
    # Pick on narrow rows; callers read the wide ones (texts, metrics) of picked runs only.
    return (
        _headline_rows(split, setting, before)
        .annotate(
            pick=Window(
                RowNumber(),
                partition_by=[F("run__submission__team_id"), group],
                order_by=_team_order(split.task),
            )
        )
        .filter(pick=1)
    )


def _board_order(task: Task) -> tuple[Any, ...]:
    """By the primary metric (incomplete results last), the earlier submission, the run."""
    return (_by_primary(task), F("run__submission__created_at").asc(), F("run_id").asc())


def narrow_board_rows(
    split: Split, setting: str, before: datetime | None = None
) -> QuerySet[Headline]:
    """The headlines of the board's entries (one per team by the task's rule, every baseline)
    in the board's order, read in the picking query itself: for narrow columns only (each is
    read for every run of the setting, not only the picked ones); of submissions made
    ``before`` then only, when given."""
    return _picked(split, setting, before).order_by(*_board_order(split.task))


_WALKED = (
    "run_id", "run__submission__team_id", "run__submission_id", BASELINE, "primary",
    "run__judge_id",
)  # fmt: skip
_SUBMISSION_ORDER = (F("run__submission__created_at").asc(), F("run_id").asc())


def walked_rows(
    split: Split, setting: str, before: datetime | None
) -> QuerySet[Headline, tuple[int, int, int, bool, float | None, str]]:
    """Every run the board of ``split`` in ``setting`` may rank, in submission order, as (run,
    team, submission, is a baseline, primary value, judge): what the Ladder walks
    (``leaderboard.public_board``)."""
    return _headline_rows(split, setting, before).order_by(*_SUBMISSION_ORDER).values_list(*_WALKED)


def team_runs(
    split: Split, setting: str, submission: Submission, before: datetime | None
) -> list[tuple[int, float | None]]:
    """The runs of ``submission``'s team (``submission`` alone for a baseline) the board of
    ``split`` in ``setting`` may rank, in submission order, with their primary values."""
    rows = _headline_rows(split, setting, before).order_by(*_SUBMISSION_ORDER)
    if submission.is_baseline:
        rows = rows.filter(run__submission=submission)
    else:
        rows = rows.filter(run__submission__team_id=submission.team_id, **{BASELINE: False})
    return list(rows.values_list("run_id", "primary"))


def ranks(lines: Iterable[tuple[float | None, bool]], shared: bool) -> list[int | None]:
    """The ranks of the board's lines (primary value, is a baseline), in the board's order:
    None for baselines; equal values share a rank when ``shared``, else the earlier line ranks
    first; incomplete results (None) never tie."""
    result: list[int | None] = []
    ranked = 0
    previous: tuple[float | None, int] | None = None
    for value, baseline in lines:
        if baseline:
            result.append(None)
            continue
        ranked += 1
        tied = previous is not None and value is not None and previous[0] == value
        rank = previous[1] if tied and shared and previous else ranked
        previous = (value, rank)
        result.append(rank)
    return result


def read_entries(
    split: Split, setting: str, run_ids: list[int], places: Sequence[Place]
) -> list[Entry]:
    """The entries of ``run_ids`` (runs of the board of ``split`` in ``setting``) at their
    ``places`` (rank, rank interval, group), in that order: their wide rows only. A laddered
    entry holds its released score alone (``Entry.released_only``): every reader of a board
    reads its entries here."""
    rows = (
        Headline.objects.filter(run_id__in=run_ids, split=split, setting=setting)
        .annotate(metrics_json=Cast("metrics", TextField()))
        .values_list(*ENTRY_FIELDS)
    )
    by_run = {row[0]: row for row in rows}
    entries = [
        Entry._make((place.rank, *by_run[run_id], *place[1:]))
        for run_id, place in zip(run_ids, places, strict=True)
    ]
    primary = split.task.primary_metric
    return [e.released_only(primary) if e.laddered else e for e in entries]


@dataclass(frozen=True)
class Board:
    """A split's leaderboard in one setting with what its pages list beside it."""

    entries: list[Entry]
    dimensions: list[str]  # slice dimensions in the entries' stored rows
    judges: list[str]  # judges behind the entries' verdicts
    setting: str = ""
    # per entry's submission: the benchmark's scores across its settings' runs (gCUE), by name,
    # and why each undefined one (None) is undefined
    derived: dict[int, dict[str, float | None]] = dataclasses.field(default_factory=dict)
    undefined: dict[int, dict[str, str]] = dataclasses.field(default_factory=dict)
    # how the entries' rank intervals and groups were computed, the split's minimum detectable
    # effect, or why there are none (``leaderboard.board_statistics``)
    statistics: dict[str, Any] = dataclasses.field(default_factory=dict)


def derived_scores(
    split: Split, run_ids: Sequence[int]
) -> tuple[dict[int, dict[str, float | None]], dict[int, dict[str, str]]]:
    """Per submission of ``run_ids`` (a board's entries), the benchmark's scores across its
    settings (``Benchmark.derived``, e.g. Visual-RAG's gCUE), from the headline rows of its
    finished runs on ``split`` (only submissions that have some), and why each undefined one is
    undefined."""
    task = split.task
    if len(task.run_settings()) < 2 or not run_ids:
        return {}, {}
    submissions = EvaluationRun.objects.filter(pk__in=list(run_ids)).values("submission_id")
    rows = (
        _headline_rows(split, None)
        .filter(run__submission_id__in=submissions)
        .values_list("run__submission_id", "run__setting", "metrics")
    )
    by_submission: dict[int, dict[str, dict[str, Any]]] = {}
    for submission_id, setting, metrics in rows:
        by_submission.setdefault(submission_id, {})[setting] = metrics
    benchmark = task.scoring()
    derived = {sid: benchmark.derived(settings) for sid, settings in by_submission.items()}
    undefined = {sid: benchmark.undefined(settings) for sid, settings in by_submission.items()}
    kept = {sid: values for sid, values in derived.items() if values}
    return kept, {sid: undefined[sid] for sid in kept if undefined[sid]}


@dataclass(frozen=True)
class StoredComparison:
    """A stored comparison, oriented as asked: ``difference`` is first minus second."""

    difference: float
    ci_low: float
    ci_high: float
    separable: bool
    p_value: float | None
    metric: str


def stored_comparison(first_run_id: int, second_run_id: int) -> StoredComparison | None:
    """The stored paired comparison of two runs, oriented as asked; None if not computed."""
    low_id, high_id = sorted((first_run_id, second_run_id))
    found = EntryComparison.objects.filter(run_a_id=low_id, run_b_id=high_id).first()
    if found is None:
        return None
    if first_run_id == low_id:
        return StoredComparison(
            found.difference, found.ci_low, found.ci_high, found.separable, found.p_value,
            found.metric,
        )  # fmt: skip
    return StoredComparison(
        -found.difference, -found.ci_high, -found.ci_low, found.separable, found.p_value,
        found.metric,
    )  # fmt: skip
