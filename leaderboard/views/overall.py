"""A challenge's overall board page (``/c/<slug>/overall/?split=<kind>``): one line per team
across the tasks its bundle counts (``leaderboard.overall``), each task's rank or value linked
to the team's entry there.

Who may see it is decided first: the challenge as its other pages find it (a draft: its
organisers only), then each counted split's results (``boards.check_revealed``), before the
cached board (``overall_board.board``) is read. The API's endpoint asks the same
(``asked``).
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlencode

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse

from evaluator.seam import Metric
from leaderboard import board_cache, overall_board, permissions
from leaderboard.models import Challenge, Split
from leaderboard.overall import AVERAGE_RANK, Overall
from leaderboard.views.boards import check_revealed


@dataclass(frozen=True)
class Asked:
    """An overall board a user may see: its challenge, declaration, kind and splits."""

    challenge: Challenge
    overall: Overall
    kind: str
    kinds: list[str]
    splits: list[Split]


def asked(user: permissions.User, slug: str, kind: str | None) -> Asked:
    """The overall board of ``slug`` on the split kind ``kind`` (default: the public test when
    every counted task has one, else the first kind they all have): 404 for a challenge the
    user may not see, one without an overall ranking or a kind it lacks; 403 when a counted
    split's results are not revealed to the user."""
    challenge = get_object_or_404(permissions.visible_challenges(user), slug=slug)
    overall = Overall.of(challenge)
    if overall is None:
        raise Http404(f"{challenge.name} has no overall ranking")
    kinds = overall_board.kinds(challenge, overall)
    if not kinds:
        raise Http404(f"{challenge.name}'s counted tasks share no split kind")
    default = Split.Kind.PUBLIC_TEST if Split.Kind.PUBLIC_TEST in kinds else kinds[0]
    kind = kind or default
    if kind not in kinds:
        raise Http404(f"no overall board on {kind!r}: its split kinds are {', '.join(kinds)}")
    splits = overall_board.splits(challenge, overall, kind)
    for split in splits:
        check_revealed(user, split)
    splits = [board_cache.current(split) for split in splits]
    return Asked(challenge, overall, kind, kinds, splits)


@dataclass(frozen=True)
class KindLink:
    label: str
    href: str  # "" when not revealed to the user
    current: bool


def kind_links(user: permissions.User, found: Asked) -> list[KindLink]:
    """The overall board's split kinds, each linked when every counted split of it is
    revealed to ``user``."""
    base = reverse("leaderboard:overall", args=(found.challenge.slug,))
    links = []
    for kind in found.kinds:
        splits = overall_board.splits(found.challenge, found.overall, kind)
        shown = all(permissions.can_see_results(user, s) for s in splits)
        href = f"{base}?{urlencode({'split': kind})}" if shown else ""
        links.append(KindLink(Split.Kind(kind).label, href, kind == found.kind))
    return links


def _setting_query(setting: str) -> str:
    return f"?{urlencode({'setting': setting})}" if setting else ""


def _shown(board: overall_board.OverallBoard, metrics: list[Metric], value: float) -> str:
    """An overall score as the page shows it: a mean rank with two decimals, a mean of
    metrics as the first counted metric shows."""
    return f"{value:.2f}" if board.method == AVERAGE_RANK else metrics[0].shown(value)


def overall_page(request: HttpRequest, slug: str) -> HttpResponse:
    found = asked(request.user, slug, request.GET.get("split"))
    board = overall_board.board(found.overall, found.kind, found.splits)
    metrics = [
        s.task.declared().metric(c.metric) for s, c in zip(found.splits, board.columns, strict=True)
    ]
    columns = [
        (
            column,
            reverse("leaderboard:leaderboard", args=(slug, column.task_id, found.kind))
            + _setting_query(column.setting),
        )
        for column in board.columns
    ]
    rows = []
    for line in board.lines:
        cells = []
        for column, metric, cell in zip(board.columns, metrics, line.cells, strict=True):
            if cell.run_id is None:
                text = "no entry" + (
                    f" (counts {cell.counted:.0f})" if cell.counted is not None else ""
                )
                cells.append((text, ""))
                continue
            args = (slug, column.task_id, found.kind, cell.run_id)
            href = reverse("leaderboard:entry", args=args) + _setting_query(column.setting)
            shown = metric.shown(cell.value)
            cells.append((f"#{cell.rank} · {shown}" if cell.rank else shown, href))
        rows.append((line, _shown(board, metrics, line.score), cells))
    context = {
        "challenge": found.challenge,
        "board": board,
        "kind": Split.Kind(found.kind).label,
        "kind_links": kind_links(request.user, found),
        "columns": columns,
        "rows": rows,
        "own_teams": permissions.user_teams(request.user).values_list("pk", flat=True),
        "export_href": reverse("api:challenge-overall", args=(slug,))
        + f"?{urlencode({'split': found.kind})}",
    }
    return render(request, "leaderboard/overall.html", context)
