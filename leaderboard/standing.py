"""Organisers' actions on a submission's standing on the boards: disqualify, hide from the
boards, restore. Each is logged (``SubmissionAction``: who, why, from which standing) and its
reason shown to the team (run pages, "My submissions"). A submission that is not ``shown`` has
no entry on any board (``leaderboard.ranking``); saving it ranks its splits' boards again
(``leaderboard.board_cache``). Its runs and scores stay: restoring puts them back as they were.
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import chain

from leaderboard.models import RunAction, Submission, SubmissionAction
from leaderboard.permissions import User
from leaderboard.submission_actions import act_on_submissions

Standing = Submission.Standing
Kind = SubmissionAction.Kind

# what each action makes of the standing
_TO = {
    Kind.DISQUALIFY: Standing.DISQUALIFIED,
    Kind.HIDE: Standing.HIDDEN,
    Kind.RESTORE: Standing.SHOWN,
}


def change_standing(kind: str, submissions: Iterable[Submission], by: User, why: str) -> list[str]:
    """``kind`` (disqualify, hide or restore) on each submission, logged; the refusals
    (already so), one line each. An empty reason is refused (``RunActionRefused``)."""
    to = _TO[Kind(kind)]

    def act(submission: Submission) -> str:
        if submission.standing == to:
            return f"it is already {to.label}"
        submission.standing = to
        submission.save(update_fields=["standing"])  # ranks its boards again
        return ""

    return act_on_submissions(kind, submissions, by, why, act)


def seen_by_team(submission: Submission) -> list[RunAction | SubmissionAction]:
    """What organisers did to a submission and its runs, latest first, as its team sees it."""
    on_runs = RunAction.objects.filter(run__submission=submission).select_related("run")
    return sorted(chain(on_runs, submission.actions.all()), key=lambda a: a.at, reverse=True)
