"""The two flags of a submission set after it was made: baseline (organisers) and chosen for
the final ranking (the team, one submission per team and challenge)."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.db import transaction

from leaderboard import board_store, permissions
from leaderboard.models import Split, Submission


def set_flags(
    submission: Submission,
    user: User,
    *,
    is_baseline: bool | None = None,
    chosen_for_final: bool | None = None,
) -> Submission:
    """Set the flags given (``None`` leaves one as it is); ``PermissionDenied`` when not allowed.

    Choosing a submission for the final un-chooses the team's other submissions to the challenge.
    """
    challenge = submission.challenge
    organiser = permissions.is_organiser(user, challenge)
    if is_baseline is not None and not organiser:
        raise PermissionDenied(f"only organisers of {challenge.slug} can mark a baseline")
    member = submission.team.memberships.filter(user=user).exists()
    if chosen_for_final is not None and not (member or organiser):
        raise PermissionDenied(f"only team {submission.team.name} can choose its final entry")
    with transaction.atomic():
        if chosen_for_final:
            Submission.objects.filter(team=submission.team, challenge=challenge).exclude(
                pk=submission.pk
            ).update(chosen_for_final=False)
        changed = []
        if is_baseline is not None:
            submission.is_baseline = is_baseline
            changed.append("is_baseline")
        if chosen_for_final is not None:
            submission.chosen_for_final = chosen_for_final
            changed.append("chosen_for_final")
        if changed:
            submission.save(update_fields=changed)
            # Entries on the team's boards may change: pages render those splits afresh.
            team_runs = Split.objects.filter(
                runs__submission__team=submission.team, runs__submission__challenge=challenge
            )
            board_store.results_changed(*team_runs.values_list("pk", flat=True).distinct())
    return submission
