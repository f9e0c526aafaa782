"""Organisers' actions on whole submissions, from the submissions panel: their standing on the
boards (``leaderboard.standing``: disqualify, hide, restore), their quota given back, and runs
on the splits and settings added since they were submitted. Each is logged
(``SubmissionAction``: who, why, the standing it found) and its reason shown to the team, as
the actions on runs are (``leaderboard.run_actions``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from django.core.exceptions import ValidationError
from django.db import transaction

from leaderboard.models import Submission, SubmissionAction
from leaderboard.permissions import User
from leaderboard.run_actions import RunActionRefused
from leaderboard.submitting.submit import add_missing_runs

Kind = SubmissionAction.Kind


def act_on_submissions(
    kind: str,
    submissions: Iterable[Submission],
    by: User,
    why: str,
    act: Callable[[Submission], str],
) -> list[str]:
    """``act`` on each submission under a row lock, logged as ``kind``; ``act`` returns why it
    did nothing ("" when it acted). The refusals, one line each. An empty reason is refused
    (``RunActionRefused``)."""
    why = why.strip()
    if not why:
        raise RunActionRefused("say why: the team reads the reason")
    refused = []
    for submission_id in [s.pk for s in submissions]:
        with transaction.atomic():
            submission = Submission.objects.select_for_update().get(pk=submission_id)
            previous = submission.standing
            problem = act(submission)
            if problem:
                refused.append(f"submission #{submission.pk}: {problem}")
                continue
            SubmissionAction.objects.create(
                submission=submission, kind=kind, by=by if by.is_authenticated else None,
                why=why, from_standing=previous,
            )  # fmt: skip
    return refused


def give_quota_back(submissions: Iterable[Submission], by: User, why: str) -> list[str]:
    """The submissions count against no quota from now on (Podium, not the team, failed them)."""

    def act(submission: Submission) -> str:
        if not submission.consumes_quota:
            return "it already counts against no quota"
        submission.consumes_quota = False
        submission.save(update_fields=["consumes_quota"])
        return ""

    return act_on_submissions(Kind.REFUND, submissions, by, why, act)


def evaluate_new_splits(submissions: Iterable[Submission], by: User, why: str) -> list[str]:
    """Runs, queued on commit, for the splits and settings the challenge evaluates now that
    each submission takes and has no run for (``add_missing_runs``: the image is reused)."""

    def act(submission: Submission) -> str:
        try:
            added = add_missing_runs(submission)
        except ValidationError as exc:
            return "; ".join(exc.messages)
        if not added:
            ended = submission.state in (*Submission.FAILED_STATES, Submission.State.CANCELLED)
            return (
                f"it is {submission.state}"
                if ended
                else "it has a run on every split and setting it takes"
            )
        return ""

    return act_on_submissions(Kind.EVALUATE, submissions, by, why, act)
