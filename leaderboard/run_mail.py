"""A team's e-mail when one of its runs ends: done or failed (a build that failed on Podium's
side fails its runs too). Each member gets one e-mail, unless they turned these off.

When ``EvaluationRun.move_to`` ends a run (its signal ``run_moved``), ``_run_ended`` writes
the notice (``notice``: a ``Mailing``) in the same transaction as the run's end, so the two
commit or roll back together, and its delivery (``leaderboard.mailing.deliver``) is sent once
they commit; a delivery lost on the way is sent again by the reaper
(``mailing.resend_waiting``). One notice per end: a ``Mailing`` keyed by the run and its
``finished_at``; a re-run or re-judge that ends again is a new end with a notice of its own.

The e-mail says what the run page says to the team: the challenge, task, split and setting,
the outcome and, for a failed run, its ``failure_reason`` (participant-safe by contract:
``docs/internals.md``, Failure reasons); never the operator detail, scores or answers. The
link is the run page's absolute URL (``mailing.absolute``).
"""

from __future__ import annotations

from django.dispatch import receiver
from django.urls import reverse

from leaderboard import mailing
from leaderboard.models import EvaluationRun, Mailing, Team
from leaderboard.models.submission import run_moved

State = EvaluationRun.State
ENDS = (State.DONE, State.FAILED)  # cancelled: the team or an organiser did it, and was told


@receiver(run_moved, sender=EvaluationRun, dispatch_uid="run_mail_run_ended")
def _run_ended(
    sender: type, run: EvaluationRun, previous: str, state: str, **kwargs: object
) -> None:
    if state not in ENDS or run.finished_at is None:
        return
    found = notice(run)
    if found is not None:
        mailing.queue_delivery(found)


def notice(run: EvaluationRun) -> Mailing | None:
    """The notice of ``run``'s end, as it is now (done or failed, at ``finished_at``): written
    once, found after; None when nobody is to receive it (the baselines' team, a team with no
    one left, or everyone turned these off)."""
    found = Mailing.objects.filter(run=run, run_finished_at=run.finished_at).first()
    if found is not None:
        return found
    run = EvaluationRun.objects.select_related("submission__team", "task__challenge", "split").get(
        pk=run.pk
    )
    team = run.submission.team
    reach = mailing.reach(mailing.people(Team.objects.filter(pk=team.pk)), Mailing.Kind.RUN_ENDED)
    if not reach.recipients:
        return None
    subject, body = _words(run)
    return Mailing.objects.create(
        kind=Mailing.Kind.RUN_ENDED,
        challenge=run.task.challenge,
        audience=f"team {team.name}",
        task=run.task,
        run=run,
        run_finished_at=run.finished_at,
        subject=subject,
        body=body,
        recipients=reach.recipients,
        skipped=reach.opted_out,
    )


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
