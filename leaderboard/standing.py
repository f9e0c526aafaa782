"""Organisers' actions on a submission's standing on the boards: disqualify, hide from the
boards, restore. Each is logged (``SubmissionAction``: who, why, from which standing) and its
reason shown to the team (run pages, "My submissions", the API), as is every action on its runs
(``seen_by_team``: kind, date, reason; never who, nor the operators' detail). A submission
that is not ``shown`` has no entry on any board (``leaderboard.ranking``); saving it ranks its
splits' boards again (``leaderboard.board_cache``). Its runs and scores stay: restoring puts
them back as they were.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from django.db.models import prefetch_related_objects

from leaderboard.models import RunAction, Submission, SubmissionAction
from leaderboard.permissions import User
from leaderboard.run_actions import TEAM_CANCEL_WHY
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


# what ``seen_by_team`` reads, prefetched by the pages and the API that list submissions
SEEN_BY_TEAM = ("actions", "runs__actions")
# what each kind of action did, as the team reads it ("run #7 re-judged by an organiser: ...")
DONE: dict[str, str] = {
    RunAction.Kind.RERUN: "re-run",
    RunAction.Kind.REJUDGE: "re-judged",
    RunAction.Kind.CANCEL: "cancelled",
    RunAction.Kind.REQUEUE: "re-queued",
    Kind.DISQUALIFY: "disqualified",
    Kind.HIDE: "hidden from the boards",
    Kind.RESTORE: "restored to the boards",
    Kind.REFUND: "given its quota back",
    Kind.EVALUATE: "evaluated on the splits added since",
    Kind.REPEAT: "run again, as a final entry, to measure the variance between runs",
}


@dataclass(frozen=True)
class SeenAction:
    """An action on a submission or one of its runs as its team sees it: what, when, why, and
    whether the team itself did it (a member cancelled a run); never which organiser, nor the
    action's ``detail`` (the operators': workers, the judge's endpoint)."""

    kind: str  # a ``RunAction.Kind`` or a ``SubmissionAction.Kind``
    label: str
    at: datetime
    run_id: int | None  # None: the submission's standing
    by_team: bool
    why: str

    @property
    def by(self) -> str:
        return "the team" if self.by_team else "an organiser"


def seen_by_team(submission: Submission) -> list[SeenAction]:
    """What was done to a submission and its runs, latest first, as its team sees it (from what
    was prefetched: ``SEEN_BY_TEAM``, else fetched here)."""
    prefetch_related_objects([submission], *SEEN_BY_TEAM)
    actions: list[RunAction | SubmissionAction] = list(submission.actions.all())
    actions += [action for run in submission.runs.all() for action in run.actions.all()]
    seen = [
        SeenAction(
            kind=action.kind,
            label=DONE[action.kind],
            at=action.at,
            run_id=action.run_id if isinstance(action, RunAction) else None,
            # a member's own cancel (``run_actions.cancel_own``), whoever is in the team now
            by_team=isinstance(action, RunAction) and action.why == TEAM_CANCEL_WHY,
            why=action.why,
        )
        for action in actions
    ]
    return sorted(seen, key=lambda action: action.at, reverse=True)
