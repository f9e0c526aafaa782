"""What a board page shows around its cached table, per request: the task and split switcher
(the challenge's other boards; a split whose results are not revealed to the user is named with
its reveal time, not linked; the challenge's overall board, when it has one) and the user's
own teams, whose rows the page highlights.

Both depend on who asks, so neither is part of a cached fragment: the fragment is the same for
everyone and marks each row with its team (``data-team``); the page adds a style rule for the
user's own teams only.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlencode

from django.http import HttpRequest
from django.urls import reverse

from leaderboard import permissions
from leaderboard.models import Split


@dataclass(frozen=True)
class SplitLink:
    label: str
    href: str  # "" when its results are not revealed to the user
    current: bool
    note: str = ""  # why it is not linked


@dataclass(frozen=True)
class TaskLinks:
    name: str
    current: bool
    splits: list[SplitLink]


def switcher(user: permissions.User, split: Split, view: str, setting: str) -> list[TaskLinks]:
    """The challenge's boards by task, each linking to the same page (``view``: a URL name)
    of that split; the setting is kept where that task evaluates it. One query."""
    challenge = split.task.challenge
    organiser = permissions.is_organiser(user, challenge)
    kinds = list(Split.Kind.values)  # validation, public test, private test
    splits = sorted(
        Split.objects.current().filter(task__challenge=challenge).select_related("task"),
        key=lambda s: (s.task.order, s.task.task_id, kinds.index(s.kind)),
    )
    tasks: dict[int, TaskLinks] = {}
    for other in splits:
        task = other.task
        links = tasks.setdefault(task.pk, TaskLinks(task.name, task.pk == split.task_id, []))
        current = other.pk == split.pk
        if not (organiser or (challenge.is_published and other.is_revealed())):
            hidden = other.visibility == Split.Visibility.HIDDEN or other.reveal_at is None
            note = "not public" if hidden else f"results from {other.reveal_at:%Y-%m-%d}"
            links.splits.append(SplitLink(other.get_kind_display(), "", current, note))
            continue
        href = reverse(f"leaderboard:{view}", args=(challenge.slug, task.task_id, other.kind))
        if setting and setting in task.run_settings():
            href += "?" + urlencode({"setting": setting})
        links.splits.append(SplitLink(other.get_kind_display(), href, current))
    return list(tasks.values())


def own_team_ids(user: permissions.User) -> list[int]:
    """The teams the user belongs to (none when signed out)."""
    return list(permissions.user_teams(user).values_list("pk", flat=True))


def around(request: HttpRequest, split: Split, view: str, setting: str) -> dict[str, object]:
    """What a board page shows around its cached body, for this user: the switcher, the own
    teams (highlighted by a style rule of the page, never inside the cached body)."""
    challenge = split.task.challenge
    overall = reverse("leaderboard:overall", args=(challenge.slug,)) if challenge.overall else ""
    return {
        "switcher": switcher(request.user, split, view, setting),
        "own_teams": own_team_ids(request.user),
        "overall_href": overall,  # the challenge's overall board, when it declares one
    }
