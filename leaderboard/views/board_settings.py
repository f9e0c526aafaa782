"""What the board pages show of a task's settings (``Task.run_settings``): the setting a
request asks for (``?setting=``), the selector's links, and the scores across a submission's
settings (``Board.derived``: Visual-RAG's gCUE) as the leaderboard's "Across settings" table."""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import TypedDict
from urllib.parse import urlencode

from django.http import Http404, HttpRequest

from leaderboard import board_cache, ranking
from leaderboard.models import Split, Task


def asked_setting(request: HttpRequest, split: Split) -> str:
    """The setting asked for by ``?setting=``; 404 naming the task's settings if unknown."""
    try:
        return board_cache.chosen_setting(split, request.GET.get("setting"))
    except board_cache.UnknownSetting as exc:
        raise Http404(str(exc)) from None


@dataclass(frozen=True)
class SettingLink:
    """One choice of the setting selector: ``href`` is a query string (``?...``)."""

    name: str
    href: str
    current: bool


class SettingsShown(TypedDict):
    setting: str
    setting_query: str
    setting_links: list[SettingLink]


def settings_shown(
    request: HttpRequest,
    split: Split,
    setting: str,
    dropped: Callable[[str], Collection[str]] = lambda name: (),
) -> SettingsShown:
    """What a board page shows of the task's settings: ``setting_query`` (``setting=...``, and
    ``version=...`` on a superseded split's board, for its links to other pages of this board;
    "" when there is neither) and the selector's links, each keeping the request's query but
    ``page`` and ``dropped(setting)`` (names of things of the current board that the other one
    lacks)."""
    known = split.task.run_settings()
    version = "" if split.is_current else urlencode({"version": split.version})
    if len(known) < 2:
        return {"setting": setting, "setting_query": version, "setting_links": []}
    query = [(k, v) for k, values in request.GET.lists() for v in values]
    links = []
    for name in known:
        kept = [(k, v) for k, v in query if k not in ("setting", "page", *dropped(name))]
        links.append(
            SettingLink(name, "?" + urlencode([*kept, ("setting", name)]), name == setting)
        )
    return {
        "setting": setting,
        "setting_query": "&".join(filter(None, (urlencode({"setting": setting}), version))),
        "setting_links": links,
    }


def _derived_order(name: str) -> tuple[str, int, str]:
    """``gcue@5`` before ``gcue@30``: by metric, then by the number after ``@``."""
    base, _, k = name.partition("@")
    return (base, int(k), "") if k.isdigit() else (base, -1, k)


def derived_names(board: ranking.Board) -> list[str]:
    """The names of the board's derived scores (``gcue@5``, ...), in order."""
    return sorted(
        {name for values in board.derived.values() for name in values}, key=_derived_order
    )


@dataclass(frozen=True)
class AcrossSettings:
    """The leaderboard's "Across settings" table: each listed entry's derived scores (text and
    title per cell: the value with three decimals, or a dash saying why it is undefined)."""

    labels: list[str]
    rows: list[tuple[ranking.Entry, list[tuple[str, str]]]]


def across_settings(
    task: Task, board: ranking.Board, listed: list[ranking.Entry]
) -> AcrossSettings | None:
    """The derived scores of the ``listed`` entries (a page of ``board``) that have some;
    None when none has. Each column is labelled as its metric is declared (gCUE@5)."""
    names = derived_names(board)
    if not names:
        return None
    declared = {m.name: m.label for m in task.declared().metrics}
    labels = []
    for name in names:
        base, at, k = name.partition("@")
        labels.append(f"{declared.get(base, base)}{at}{k}")
    rows = []
    for entry in listed:
        values = board.derived.get(entry.submission_id)
        if values:
            cells = []
            why = board.undefined.get(entry.submission_id, {})
            for name in names:
                value = values.get(name)
                undefined = why.get(name, "undefined")
                cells.append(("—", undefined) if value is None else (f"{value:.3f}", ""))
            rows.append((entry, cells))
    return AcrossSettings(labels, rows) if rows else None
