"""A team's e-mail when one of its runs ends: done or failed (a build that failed on Podium's
side fails its runs too). Each member gets one e-mail, unless they turned these off.

When ``EvaluationRun.move_to`` ends a run (its signal ``run_moved``), ``_run_ended`` sends the
Celery task ``mail.run_ended`` once the transaction commits (``leaderboard.dispatch``); the
task (``leaderboard.tasks``) writes the notice (``notice``) and delivers it
(``leaderboard.mailing.deliver``). One notice per end: a ``Mailing`` keyed by the run and its
``finished_at``, so a message delivered twice sends nothing more, and a re-run or re-judge
that ends again is a new end with a notice of its own. A notice of an end the run has left
since (re-run meanwhile) is not written.

The e-mail says what the run page says to the team: the challenge, task, split and setting,
the outcome and, for a failed run, its ``failure_reason`` (participant-safe by contract:
``docs/internals.md``, Failure reasons); never the operator detail, scores or answers. The
link is the run page's absolute URL (``mailing.absolute``).
"""

from __future__ import annotations

from datetime import datetime

from django.db import IntegrityError, transaction
from django.dispatch import receiver
from django.urls import reverse

from leaderboard import mailing
from leaderboard.dispatch import send_after_commit
from leaderboard.models import EvaluationRun, Mailing, Membership, Team
from leaderboard.models.submission import run_moved

State = EvaluationRun.State
ENDS = (State.DONE, State.FAILED)  # cancelled: the team or an organiser did it, and was told


@receiver(run_moved, sender=EvaluationRun, dispatch_uid="run_mail_run_ended")
def _run_ended(
    sender: type, run: EvaluationRun, previous: str, state: str, **kwargs: object
) -> None:
    if state not in ENDS or run.finished_at is None:
        return
    if not Membership.objects.filter(team__submissions=run.submission_id).exists():
        return  # the baselines' team, or a team with no one left: nobody to tell
    send_after_commit(
        "mail.run_ended",
        {"run_id": run.pk, "state": state, "finished_at": run.finished_at.isoformat()},
        f"run #{run.pk}'s e-mail",
    )


def notice(run_id: int, state: str, finished_at: str) -> Mailing | None:
    """The notice of ``run_id``'s end in ``state`` at ``finished_at``: written once, found
    after; None when the run has left that end since or nobody is to receive it."""
    ended = datetime.fromisoformat(finished_at)
    found = Mailing.objects.filter(run_id=run_id, run_finished_at=ended).first()
    if found is not None:
        return found
    run = (
        EvaluationRun.objects.select_related("submission__team", "task__challenge", "split")
        .filter(pk=run_id, state=state, finished_at=ended)
        .first()
    )
    if run is None:
        return None
    team = run.submission.team
    among = mailing.people(Team.objects.filter(pk=team.pk))
    reach = mailing.reach(among, Mailing.Kind.RUN_ENDED)
    if not reach.recipients:
        return None
    subject, body = _words(run)
    try:
        with transaction.atomic():
            return Mailing.objects.create(
                kind=Mailing.Kind.RUN_ENDED,
                challenge=run.task.challenge,
                audience=f"team {team.name}",
                task=run.task,
                run=run,
                run_finished_at=ended,
                subject=subject,
                body=body,
                recipients=reach.recipients,
                skipped=reach.opted_out,
            )
    except IntegrityError:  # written by another delivery of the same message meanwhile
        return Mailing.objects.get(run_id=run_id, run_finished_at=ended)


def _words(run: EvaluationRun) -> tuple[str, str]:
    challenge, task, split = run.task.challenge, run.task, run.split
    where = f"{task.name}, {split.get_kind_display()}"
    if run.setting:
        where += f" ({run.setting})"
    outcome = "finished" if run.state == State.DONE else "failed"
    subject = f"[{challenge.name}] Run #{run.pk} {outcome}: {where}"
    finished = run.finished_at.strftime("%Y-%m-%d %H:%M") if run.finished_at else ""
    lines = [
        f"The run #{run.pk} of your team {run.submission.team.name} ({run.submission.method_name},"
        f" submission #{run.submission_id}) on {challenge.name}, {where}, {outcome} at "
        f"{finished} UTC.",
    ]
    if run.state == State.FAILED and run.failure_reason:
        lines += ["", f"Why: {run.failure_reason}"]
    lines += ["", "The run page:", mailing.absolute(reverse("leaderboard:run", args=[run.pk]))]
    return subject, "\n".join(lines)
