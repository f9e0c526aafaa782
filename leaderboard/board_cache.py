"""Rendered leaderboard fragments, cached per split until the split's results change.

A split's ``results_version`` becomes a fresh UUID and its stored boards are ranked again
(``board_store.results_changed``) whenever anything its leaderboard shows changes: stored
scores (``store_scores``), a run entering or leaving ``done`` (``EvaluationRun.move_to``'s
signal ``run_moved``), a submission's method, links, baseline or chosen flag, a team's name, a
task's ranking rule (a new primary metric first re-ranks the stored score rows,
``scores.rank_again``), a deleted run (the receivers below). Fragments are keyed by that
version, so a page never shows results older than the database and no process has to be told
to forget anything: every web process (each with its own default cache, or all sharing one)
stops asking for the old keys, which then expire.

A value made from several splits' boards (a challenge's overall board, ``overall_board``) is
keyed by all of their versions (``across``): it is computed afresh once any of them changes.

A task whose benchmark evaluates several settings (Visual-RAG's ``zero_shot``, ``gt_clue``, ...)
has one leaderboard per setting: boards and fragments are keyed by the setting too, so two
settings never share one.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import TypeVar, cast

from django.core.cache import cache
from django.db.models import QuerySet
from django.db.models.signals import post_delete, post_save, pre_save
from django.dispatch import receiver
from django.utils.safestring import SafeString, mark_safe

from leaderboard import board_store, public_board, ranking, scores
from leaderboard.models import (
    Challenge,
    EvaluationRun,
    JudgeAudit,
    RankedBoard,
    Split,
    Submission,
    Task,
    Team,
)
from leaderboard.models.submission import run_moved

T = TypeVar("T")

# Long enough to serve a busy leaderboard from memory, short enough to free old keys' memory.
FRAGMENT_TIMEOUT_S = 15 * 60
# set on a challenge being saved with a new freeze or Ladder threshold (``public_board``)
_PUBLIC_CHANGED = "_podium_public_board_changed"


class UnknownSetting(ValueError):
    """A setting the split's task does not evaluate; the message names the ones it does."""


def chosen_setting(split: Split, asked: str | None) -> str:
    """The setting of ``split``'s leaderboard a request asks for: ``asked`` when the task
    evaluates it, its first setting when nothing (or "") is asked; else ``UnknownSetting``."""
    known = split.task.run_settings()
    if not asked:
        return known[0]
    if asked not in known:
        valid = f"its settings are {', '.join(known)}" if any(known) else "it has no settings"
        raise UnknownSetting(f"{split} has no setting {asked!r}: {valid}")
    return asked


def _key(split: Split, name: str, setting: str, parts: Iterable[object] = ()) -> str:
    # The setting is hashed with the parts: whatever it holds, keys stay short and distinct.
    detail = hashlib.sha256("\x1f".join(map(str, (setting, *parts))).encode()).hexdigest()[:32]
    return f"podium:board:{split.pk}:{split.results_version}:{name}:{detail}"


def _cached(key: str, compute: Callable[[], T]) -> T:
    # get_or_set returns what is cached under key, else compute()'s value: the stubs' "| None"
    # is only a cached None, which nothing here stores (compute never returns None).
    return cast(T, cache.get_or_set(key, compute, FRAGMENT_TIMEOUT_S))


def derived(
    split: Split, setting: str, name: str, compute: Callable[[], T], parts: Iterable[object] = ()
) -> T:
    """``compute()``, a value derived from ``split``'s results in ``setting`` alone (and
    ``parts``), computed once per version of those results (then cached under ``name``)."""
    return _cached(_key(split, name, setting, parts), compute)


def across(
    splits: Sequence[Split], name: str, parts: Iterable[object], compute: Callable[[], T]
) -> T:
    """``compute()``, a value derived from the results of several splits (a challenge's overall
    board) and ``parts``, computed once per version of all of their results (then cached
    under ``name``)."""
    versions = [f"{split.pk}:{split.results_version}" for split in splits]
    detail = hashlib.sha256("\x1f".join(map(str, (*versions, *parts))).encode()).hexdigest()
    return _cached(f"podium:boards:{name}:{detail[:32]}", compute)


def current(split: Split) -> Split:
    """``split``, its boards ranked again first when a freeze of its public board began or
    ended since they were (``public_board.stale``): its new ``results_version`` keys its
    pages afresh. Every page and API answer of a board asks it before reading the cache."""
    if public_board.stale(split):
        board_store.results_changed(split.pk)
        split.refresh_from_db(fields=["results_version"])
    return split


def refresh_frozen(now: datetime | None = None) -> list[int]:
    """``current`` for every current public test whose challenge freezes its board: those
    whose freeze began or ended since they were ranked are ranked again now (the reaper calls
    it), so a board nobody reads still freezes and thaws on time. Their ids."""
    splits = Split.objects.filter(
        kind=Split.Kind.PUBLIC_TEST,
        superseded_at__isnull=True,
        task__challenge__freeze_days__isnull=False,
    ).select_related("task__challenge")
    ranked = []
    for split in splits:
        if public_board.stale(split, now):
            board_store.results_changed(split.pk)
            ranked.append(split.pk)
    return ranked


def board(split: Split, setting: str = "", raw: bool = False) -> ranking.Board:
    """``board_store.board(split, setting, raw)``, read once per version of the split's
    results."""
    name = "board-raw" if raw else "board"
    return derived(split, setting, name, lambda: board_store.board(split, setting, raw))


def fragment(
    split: Split, setting: str, name: str, parts: Iterable[object], render: Callable[[], str]
) -> SafeString:
    """The HTML fragment ``name`` of ``split``'s leaderboard in ``setting`` for ``parts`` (page,
    dimension, ...): from the cache while the split's results are unchanged, else
    ``render()``'s (then cached)."""
    html = _cached(_key(split, name, setting, parts), render)
    return mark_safe(html)  # rendered by our own autoescaping templates


@receiver(post_save, sender=Submission, dispatch_uid="board_cache_submission")
def _submission_saved(sender: type, instance: Submission, created: bool, **kwargs: object) -> None:
    if not created:
        board_store.results_changed(
            *Split.objects.filter(runs__submission=instance).values_list("pk", flat=True)
        )


@receiver(pre_save, sender=Challenge, dispatch_uid="board_cache_challenge_public")
def _challenge_saving(
    sender: type, instance: Challenge, raw: bool = False, **kwargs: object
) -> None:
    # a new freeze or Ladder threshold: the receiver below re-ranks the public tests' boards
    if instance.pk is None or raw:
        return
    rules = ("freeze_days", "ladder_threshold")
    before = Challenge.objects.filter(pk=instance.pk).values_list(*rules).first()
    if before is not None and before != tuple(getattr(instance, name) for name in rules):
        instance.__dict__[_PUBLIC_CHANGED] = True


@receiver(post_save, sender=Challenge, dispatch_uid="board_cache_challenge")
def _challenge_saved(sender: type, instance: Challenge, **kwargs: object) -> None:
    if instance.__dict__.pop(_PUBLIC_CHANGED, False):
        splits = Split.objects.filter(task__challenge=instance, kind=Split.Kind.PUBLIC_TEST)
        board_store.results_changed(*splits.values_list("pk", flat=True))


@receiver(post_save, sender=Team, dispatch_uid="board_cache_team")
def _team_saved(sender: type, instance: Team, created: bool, **kwargs: object) -> None:
    if not created:
        splits = Split.objects.filter(runs__submission__team=instance).values_list("pk", flat=True)
        board_store.results_changed(*splits)


@receiver(run_moved, sender=EvaluationRun, dispatch_uid="board_cache_run_moved")
def _run_moved(
    sender: type, run: EvaluationRun, previous: str, state: str, **kwargs: object
) -> None:
    if EvaluationRun.State.DONE in (state, previous):  # it enters or leaves the boards
        board_store.results_changed(run.split_id)


@receiver(pre_save, sender=Task, dispatch_uid="board_cache_task_primary")
def _task_saving(sender: type, instance: Task, raw: bool = False, **kwargs: object) -> None:
    # a new primary metric re-ranks the stored score rows (no run is scored again) before the
    # save, whose receiver below ranks the boards from them (a fixture's raw save: as it is)
    if instance.pk is None or raw:
        return
    before = Task.objects.filter(pk=instance.pk).values_list("primary_metric", flat=True).first()
    if before is not None and before != instance.primary_metric:
        scores.rank_again(instance)


@receiver(post_save, sender=Task, dispatch_uid="board_cache_task")
def _task_saved(sender: type, instance: Task, created: bool, **kwargs: object) -> None:
    if not created:
        board_store.results_changed(*instance.splits.values_list("pk", flat=True))


@receiver(post_delete, sender=EvaluationRun, dispatch_uid="board_cache_run")
def _run_deleted(
    sender: type, instance: EvaluationRun, origin: object = None, **kwargs: object
) -> None:
    deleted = origin.model if isinstance(origin, QuerySet) else type(origin)
    if deleted not in (Split, Task, Challenge):  # else the run's board goes with its split
        board_store.results_changed(instance.split_id)


@receiver(post_save, sender=JudgeAudit, dispatch_uid="board_cache_audit")
@receiver(post_delete, sender=JudgeAudit, dispatch_uid="board_cache_audit_deleted")
def _audit_changed(sender: type, instance: JudgeAudit, **kwargs: object) -> None:
    # a finished audit calibrates its split's boards (``leaderboard.calibration``)
    if instance.finished_at is not None:
        board_store.results_changed(instance.split_id)


@receiver(post_delete, sender=Split, dispatch_uid="board_cache_split")
def _split_deleted(sender: type, instance: Split, **kwargs: object) -> None:
    # a board ranked again while the split's runs went (by a receiver of theirs) goes too
    RankedBoard.objects.filter(split_id=instance.pk).delete()
